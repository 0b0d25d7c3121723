"""Outgoing batches: a retry key stored before each push, and which batches were accepted."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

from pydantic import BaseModel, Field
from sqlite_utils import Database

from gateway.store.base import QueriesBase, decode_json_fields, one


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

    async def delivery_batch(
        self, channel: str, ref: str, batch: int, retry_key: str, now: float | None = None
    ) -> DeliveryBatch:
        """The stored batch, created with `retry_key` when it is new."""
        at = time.time() if now is None else now

        def get(db: Database) -> DeliveryBatch:
            with db.atomic():
                db.execute(
                    "insert or ignore into deliveries (channel, ref, batch, retry_key, created_at)"
                    " values (?, ?, ?, ?, ?)",
                    [channel, ref, batch, retry_key, at],
                )
                row = one(
                    db,
                    "select * from deliveries where channel = ? and ref = ? and batch = ?",
                    [channel, ref, batch],
                )
            assert row is not None
            return DeliveryBatch.model_validate(decode_json_fields(row, "platform_ids"))

        return await self.run(get)

    async def delivery_sent(
        self, channel: str, ref: str, batch: int, ids: Sequence[str], now: float | None = None
    ) -> None:
        """Mark a batch accepted by the platform, with the ids of its messages."""
        at = time.time() if now is None else now
        await self.run(
            lambda db: db.execute(
                "update deliveries set sent_at = ?, platform_ids = ?"
                " where channel = ? and ref = ? and batch = ?",
                [at, json.dumps(list(ids)), channel, ref, batch],
            )
        )
