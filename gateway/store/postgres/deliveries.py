"""Outgoing batches on PostgreSQL: a retry key stored before each push, and which were accepted."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

from gateway.store.base import decode_json_fields
from gateway.store.deliveries import DeliveryBatch
from gateway.store.postgres.base import PgQueriesBase


class PgDeliveryQueries(PgQueriesBase):
    """Progress of multi-part deliveries, so a retry never resends an accepted batch."""

    async def delivery_batch(
        self, channel: str, ref: str, batch: int, retry_key: str, now: float | None = None
    ) -> DeliveryBatch:
        """The stored batch, created with `retry_key` when it is new."""
        at = time.time() if now is None else now
        async with self._tx() as conn:
            await conn.execute(
                "insert into deliveries (channel, ref, batch, retry_key, created_at)"
                " values ($1, $2, $3, $4, $5) on conflict (channel, ref, batch) do nothing",
                channel,
                ref,
                batch,
                retry_key,
                at,
            )
            # A statement of its own: it sees a row that a concurrent insert committed.
            row = await conn.fetchrow(
                "select * from deliveries where channel = $1 and ref = $2 and batch = $3",
                channel,
                ref,
                batch,
            )
        assert row is not None
        return DeliveryBatch.model_validate(decode_json_fields(dict(row), "platform_ids"))

    async def delivery_sent(
        self, channel: str, ref: str, batch: int, ids: Sequence[str], now: float | None = None
    ) -> None:
        """Mark a batch accepted by the platform, with the ids of its messages."""
        at = time.time() if now is None else now
        await self._execute(
            "update deliveries set sent_at = $1, platform_ids = $2"
            " where channel = $3 and ref = $4 and batch = $5",
            at,
            json.dumps(list(ids)),
            channel,
            ref,
            batch,
        )
