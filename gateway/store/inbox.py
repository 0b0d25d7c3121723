"""Inbox: every platform update is stored (deduplicated) before it is acknowledged."""

from __future__ import annotations

import time

from sqlite_utils import Database

from gateway.core.records import InboxItem
from gateway.store.base import QueriesBase


class InboxQueries(QueriesBase):
    """Durable, deduplicated queue of raw platform updates."""

    async def inbox_add(
        self, channel: str, update_id: str, chat_key: str, payload: str, now: float | None = None
    ) -> InboxItem | None:
        """Store an update; None when (channel, update_id) was seen before."""
        at = time.time() if now is None else now

        def add(db: Database) -> InboxItem | None:
            cur = db.execute(
                "insert or ignore into inbox (channel, update_id, chat_key, payload, received_at)"
                " values (?, ?, ?, ?, ?)",
                [channel, update_id, chat_key, payload, at],
            )
            if cur.rowcount == 0:
                return None
            return InboxItem(
                id=int(cur.lastrowid or 0),
                channel=channel,
                update_id=update_id,
                chat_key=chat_key,
                payload=payload,
                received_at=at,
            )

        return await self.run(add)

    async def inbox_pending(self) -> list[InboxItem]:
        """Unprocessed updates in arrival order."""
        return await self.run(
            lambda db: [
                InboxItem.model_validate(r)
                for r in db.query("select * from inbox where processed_at is null order by id")
            ]
        )

    async def inbox_done(self, item_id: int, *, error: str | None = None) -> None:
        """Mark an update processed (with the error that ended it, if any)."""
        await self.run(
            lambda db: db.execute(
                "update inbox set processed_at = ?, last_error = coalesce(?, last_error),"
                " claimed_by = null, lease_until = null where id = ?",
                [time.time(), error, item_id],
            )
        )

    async def inbox_failed(self, item_id: int, error: str) -> int:
        """Record a failed attempt; returns the attempts so far."""

        def fail(db: Database) -> int:
            db.execute(
                "update inbox set attempts = attempts + 1, last_error = ? where id = ?",
                [error[:2000], item_id],
            )
            row = db.execute("select attempts from inbox where id = ?", [item_id]).fetchone()
            return int(row[0]) if row else 0

        return await self.run(fail)

    async def inbox_prune(self, older_than: float) -> int:
        """Forget processed updates received before `older_than` (epoch seconds)."""
        return await self.run(
            lambda db: (
                db.execute(
                    "delete from inbox where processed_at is not null and received_at < ?",
                    [older_than],
                ).rowcount
            )
        )

    async def inbox_pending_count(self) -> int:
        """How many stored updates wait to be processed."""
        return await self.run(
            lambda db: int(
                db.execute("select count(*) from inbox where processed_at is null").fetchone()[0]
            )
        )
