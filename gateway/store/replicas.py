"""What replicas sharing one database need: inbox claims with leases, a registry fingerprint.

One process never needs these; they work on SQLite too so both backends keep one
contract (and one test suite).
"""

from __future__ import annotations

import hashlib
import time

from gateway.core.records import ClaimFence, InboxItem
from gateway.store.inbox import FENCE_CLAIM, ITEM, InboxQueries, fence_args
from gateway.store.sql import Conn, marks, query, urgent


class ReplicaQueries(InboxQueries):
    """The inbox shared by replicas: claims on stored updates, and a registry fingerprint."""

    @query
    async def inbox_claim(
        self,
        c: Conn,
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
        taken over once its lease expires. On PostgreSQL `for update skip locked` lets
        replicas claim at the same moment without waiting on each other; a row another
        replica claimed meanwhile is checked again on its new version (its lease now
        runs), so no row is claimed twice. Each claim counts up the row's `claim`: the
        number the work is fenced by (`inbox_fence`). A first claim is `started`: its
        attempt was counted as the update was stored (`inbox_add`).
        """
        at = time.time() if now is None else now
        if limit <= 0 or not channels:
            return []
        # The candidates are picked once, in a materialized CTE: as `where id in (...)`,
        # PostgreSQL could evaluate the `limit ... skip locked` subquery more than once,
        # and one claim took every chat's head, whatever `limit` said.
        rows = await c.fetch(
            f"""
            with picked as materialized (
                select i.id from inbox i
                where i.processed_at is null
                  and i.channel in ({marks(channels)})
                  and (i.lease_until is null or i.lease_until < ?)
                  and i.id = (
                      select min(h.id) from inbox h
                      where h.processed_at is null
                        and h.channel = i.channel and h.chat_key = i.chat_key
                  )
                order by i.id
                limit ?
                {c.dialect.skip_locked}
            )
            update inbox set claimed_by = ?, lease_until = ?, claim = claim + 1
            where id in (select id from picked)
            and processed_at is null
            and (lease_until is null or lease_until < ?)
            returning {ITEM}
            """,
            *channels,
            at,
            limit,
            holder,
            at + lease,
            at,
        )
        # An update's first claim finds the attempt its storing counted unused (nothing could
        # work on it unclaimed): the worker starts on it without counting another.
        items = (InboxItem.model_validate({**r, "started": r["claim"] == 1}) for r in rows)
        return sorted(items, key=lambda item: item.id)

    @urgent
    async def inbox_renew(
        self,
        c: Conn,
        holder: str,
        claims: list[tuple[int, int]],
        lease: float,
        now: float | None = None,
    ) -> list[int]:
        """Extend `holder`'s leases on (update id, claim number) pairs; returns the ids kept.

        An update claimed again since (by another replica, or by this one after its lease
        ran out) has another claim number: the work of the old claim is not renewed.
        """
        at = time.time() if now is None else now
        if not claims:
            return []
        which = " or ".join("(id = ? and claim = ?)" for _ in claims)
        rows = await c.fetch(
            f"update inbox set lease_until = ? where claimed_by = ? and processed_at is null"
            f" and ({which}) returning id",
            at + lease,
            holder,
            *(value for pair in claims for value in pair),
        )
        return sorted(int(r["id"]) for r in rows)

    @query  # a fence waiting for a connection delays a send; it never lets a wrong one out
    async def inbox_fence(
        self,
        c: Conn,
        holder: str,
        item_id: int,
        claim: int,
        lease: float,
        now: float | None = None,
    ) -> bool:
        """Before a send: True when `holder` still holds claim `claim` on the update.

        The check extends the lease in the same statement, so the send that follows has a
        whole lease before anyone may take the update over. A claim taken over is another
        number (the row's lock orders the two updates), so it fails here for good.
        """
        at = time.time() if now is None else now
        fence = ClaimFence(holder, item_id, claim, lease)
        return await c.execute(FENCE_CLAIM, *fence_args(fence, at)) == 1

    @query
    async def inbox_release(self, c: Conn, holder: str) -> int:
        """Give back every unfinished claim of `holder` (a clean stop), for others to take."""
        return await c.execute(
            "update inbox set claimed_by = null, lease_until = null"
            " where claimed_by = ? and processed_at is null",
            holder,
        )

    @query
    async def skills_fingerprint(self, c: Conn) -> str:
        """Changes whenever any skill registry row changes (a replica then reloads)."""
        digest = hashlib.sha256()
        for row in await c.fetch(
            "select slug, source, enabled, review_status, content_hash from skills order by slug"
        ):
            digest.update("|".join(str(v) for v in row.values()).encode() + b"\n")
        return digest.hexdigest()
