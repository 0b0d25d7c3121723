"""Inbox on PostgreSQL: every platform update is stored (deduplicated) before it is acknowledged."""

from __future__ import annotations

import time

from gateway.core.records import InboxItem
from gateway.store.postgres.base import PgQueriesBase

_ITEM = "id, channel, update_id, chat_key, payload, received_at, processed_at, attempts, last_error"


class PgInboxQueries(PgQueriesBase):
    """Durable, deduplicated queue of raw platform updates."""

    async def inbox_add(
        self, channel: str, update_id: str, chat_key: str, payload: str, now: float | None = None
    ) -> InboxItem | None:
        """Store an update; None when (channel, update_id) was seen before."""
        at = time.time() if now is None else now
        row = await self._fetchrow(
            "insert into inbox (channel, update_id, chat_key, payload, received_at)"
            " values ($1, $2, $3, $4, $5) on conflict (channel, update_id) do nothing"
            f" returning {_ITEM}",
            channel,
            update_id,
            chat_key,
            payload,
            at,
        )
        return None if row is None else InboxItem.model_validate(row)

    async def inbox_pending(self) -> list[InboxItem]:
        """Unprocessed updates in arrival order."""
        rows = await self._fetch(
            f"select {_ITEM} from inbox where processed_at is null order by id"
        )
        return [InboxItem.model_validate(r) for r in rows]

    async def inbox_done(self, item_id: int, *, error: str | None = None) -> None:
        """Mark an update processed (with the error that ended it, if any)."""
        await self._execute(
            "update inbox set processed_at = $1, last_error = coalesce($2, last_error),"
            " claimed_by = null, lease_until = null where id = $3",
            time.time(),
            error,
            item_id,
        )

    async def inbox_failed(self, item_id: int, error: str) -> int:
        """Record a failed attempt; returns the attempts so far."""
        attempts = await self._fetchval(
            "update inbox set attempts = attempts + 1, last_error = $1 where id = $2"
            " returning attempts",
            error[:2000],
            item_id,
        )
        return 0 if attempts is None else int(attempts)

    async def inbox_prune(self, older_than: float) -> int:
        """Forget processed updates received before `older_than` (epoch seconds)."""
        return await self._execute(
            "delete from inbox where processed_at is not null and received_at < $1", older_than
        )

    async def inbox_pending_count(self) -> int:
        """How many stored updates wait to be processed."""
        return int(await self._fetchval("select count(*) from inbox where processed_at is null"))
