"""Replica queries on PostgreSQL: inbox claims with leases, a registry fingerprint."""

from __future__ import annotations

import time

from gateway.core.records import InboxItem
from gateway.store.postgres.base import PgQueriesBase

_ITEM = (
    "i.id, i.channel, i.update_id, i.chat_key, i.payload, i.received_at, i.processed_at,"
    " i.attempts, i.last_error"
)


class PgReplicaQueries(PgQueriesBase):
    """Same methods as gateway.store.replicas, safe with any number of replicas."""

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
        nobody's lease on it runs. `for update skip locked` lets replicas claim at the
        same moment without waiting on each other; a row another replica claimed meanwhile
        is checked again on its new version (its lease now runs), so no row is claimed twice.
        """
        at = time.time() if now is None else now
        if limit <= 0 or not channels:
            return []
        rows = await self._fetch(
            f"""
            update inbox i set claimed_by = $1, lease_until = $2
            where i.id in (
                select c.id from inbox c
                where c.processed_at is null
                  and c.channel = any($3::text[])
                  and (c.lease_until is null or c.lease_until < $4)
                  and c.id = (
                      select min(h.id) from inbox h
                      where h.processed_at is null
                        and h.channel = c.channel and h.chat_key = c.chat_key
                  )
                order by c.id
                limit $5
                for update skip locked
            )
            and i.processed_at is null
            and (i.lease_until is null or i.lease_until < $4)
            returning {_ITEM}
            """,
            holder,
            at + lease,
            channels,
            at,
            limit,
        )
        return sorted((InboxItem.model_validate(r) for r in rows), key=lambda item: item.id)

    async def inbox_renew(
        self, holder: str, item_ids: list[int], lease: float, now: float | None = None
    ) -> list[int]:
        """Extend `holder`'s leases; returns the ids it still holds."""
        at = time.time() if now is None else now
        if not item_ids:
            return []
        rows = await self._fetch(
            "update inbox set lease_until = $1 where claimed_by = $2 and id = any($3::bigint[])"
            " and processed_at is null returning id",
            at + lease,
            holder,
            item_ids,
        )
        return sorted(int(r["id"]) for r in rows)

    async def inbox_release(self, holder: str) -> int:
        """Give back every unfinished claim of `holder` (a clean stop), for others to take."""
        return await self._execute(
            "update inbox set claimed_by = null, lease_until = null"
            " where claimed_by = $1 and processed_at is null",
            holder,
        )

    async def skills_fingerprint(self) -> str:
        """Changes whenever any skill registry row changes (a replica then reloads)."""
        value = await self._fetchval(
            "select coalesce(md5(string_agg(concat_ws('|', slug, source, enabled, review_status,"
            " content_hash), E'\\n' order by slug)), '') from skills"
        )
        return str(value)
