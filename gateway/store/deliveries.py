"""Outgoing batches: a retry key stored before each push, and which batches were accepted."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

from pydantic import BaseModel, Field

from gateway.store.messages import set_platform_ids
from gateway.store.sql import Conn, QueriesBase, decode_json_fields, transaction


class DeliveryBatch(BaseModel):
    """One batch of messages carrying (part of) an answer or notice."""

    channel: str
    ref: str
    batch: int
    retry_key: str
    sent_at: float | None = None
    platform_ids: list[str] = Field(default_factory=list)
    created_at: float


class DeliveryQueries(QueriesBase):
    """Progress of multi-part deliveries, so a retry never resends an accepted batch."""

    @transaction
    async def delivery_batch(
        self, c: Conn, channel: str, ref: str, batch: int, retry_key: str, now: float | None = None
    ) -> DeliveryBatch:
        """The stored batch, created with `retry_key` when it is new."""
        at = time.time() if now is None else now
        await c.execute(
            "insert into deliveries (channel, ref, batch, retry_key, created_at)"
            " values (?, ?, ?, ?, ?) on conflict (channel, ref, batch) do nothing",
            channel,
            ref,
            batch,
            retry_key,
            at,
        )
        # A statement of its own: it sees a row that a concurrent insert committed.
        row = await c.fetchrow(
            "select * from deliveries where channel = ? and ref = ? and batch = ?",
            channel,
            ref,
            batch,
        )
        assert row is not None
        return DeliveryBatch.model_validate(decode_json_fields(row, "platform_ids"))

    @transaction
    async def delivery_sent(
        self,
        c: Conn,
        channel: str,
        ref: str,
        batch: int,
        ids: Sequence[str],
        now: float | None = None,
        *,
        retry_key: str = "",
        answer: int | None = None,
        answer_ids: Sequence[str] = (),
    ) -> None:
        """Mark a batch accepted by the platform, with the ids of its messages.

        A batch sent by reply token is recorded only now (`retry_key` is then never used).
        With `answer`, the answer's message keeps `answer_ids`, the ids of all its batches
        so far, in the same transaction.
        """
        at = time.time() if now is None else now
        sent = json.dumps(list(ids))
        await c.execute(
            "insert into deliveries (channel, ref, batch, retry_key, sent_at, platform_ids,"
            " created_at) values (?, ?, ?, ?, ?, ?, ?) on conflict (channel, ref, batch)"
            " do update set sent_at = excluded.sent_at, platform_ids = excluded.platform_ids",
            channel,
            ref,
            batch,
            retry_key,
            at,
            sent,
            at,
        )
        if answer is not None:
            await set_platform_ids(c, answer, answer_ids)
