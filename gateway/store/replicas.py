"""What replicas sharing one database need: inbox claims with leases, a registry fingerprint.

One process never needs these; they are here on SQLite too so both backends keep
one contract (and one test suite).
"""

from __future__ import annotations

import hashlib
import time

from sqlite_utils import Database

from gateway.core.records import InboxItem
from gateway.store.base import QueriesBase


class ReplicaQueries(QueriesBase):
    """Claims on stored updates, and a cheap way to see the skill registry change."""

    async def inbox_claim(
        self,
        holder: str,
        lease: float,
        *,
        channels: list[str],
        limit: int,
        now: float | None = None,
    ) -> list[InboxItem]:
        """Claim up to `limit` updates for `holder` until now + `lease`.

        Only the oldest unprocessed update of each chat can be claimed, and only when
        nobody's lease on it runs: so a chat's updates are answered one after another,
        in order, whichever replica takes each, and work left by a replica that died is
        taken over once its lease expires.
        """
        at = time.time() if now is None else now
        if limit <= 0 or not channels:
            return []
        marks = ", ".join("?" for _ in channels)

        def claim(db: Database) -> list[InboxItem]:
            with db.atomic():
                rows = [
                    dict(r)
                    for r in db.query(
                        "select * from inbox i where processed_at is null"
                        f" and channel in ({marks})"
                        " and (lease_until is null or lease_until < ?)"
                        " and id = (select min(id) from inbox h where h.processed_at is null"
                        " and h.channel = i.channel and h.chat_key = i.chat_key)"
                        " order by id limit ?",
                        [*channels, at, limit],
                    )
                ]
                ids = [r["id"] for r in rows]
                if not ids:
                    return []
                db.execute(
                    f"update inbox set claimed_by = ?, lease_until = ?"
                    f" where id in ({', '.join('?' for _ in ids)})",
                    [holder, at + lease, *ids],
                )
            return [InboxItem.model_validate(r) for r in rows]

        return await self.run(claim)

    async def inbox_renew(
        self, holder: str, item_ids: list[int], lease: float, now: float | None = None
    ) -> list[int]:
        """Extend `holder`'s leases; returns the ids it still holds."""
        at = time.time() if now is None else now
        if not item_ids:
            return []
        marks = ", ".join("?" for _ in item_ids)

        def renew(db: Database) -> list[int]:
            db.execute(
                f"update inbox set lease_until = ? where claimed_by = ? and id in ({marks})"
                " and processed_at is null",
                [at + lease, holder, *item_ids],
            )
            return [
                int(r["id"])
                for r in db.query(
                    f"select id from inbox where claimed_by = ? and id in ({marks})"
                    " and processed_at is null order by id",
                    [holder, *item_ids],
                )
            ]

        return await self.run(renew)

    async def inbox_release(self, holder: str) -> int:
        """Give back every unfinished claim of `holder` (a clean stop), for others to take."""
        return await self.run(
            lambda db: (
                db.execute(
                    "update inbox set claimed_by = null, lease_until = null"
                    " where claimed_by = ? and processed_at is null",
                    [holder],
                ).rowcount
            )
        )

    async def skills_fingerprint(self) -> str:
        """Changes whenever any skill registry row changes (a replica then reloads)."""

        def fingerprint(db: Database) -> str:
            digest = hashlib.sha256()
            for row in db.execute(
                "select slug, source, enabled, review_status, content_hash from skills"
                " order by slug"
            ):
                digest.update("|".join(str(v) for v in row).encode() + b"\n")
            return digest.hexdigest()

        return await self.run(fingerprint)
