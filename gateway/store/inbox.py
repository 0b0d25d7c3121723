"""Inbox: every platform update is stored (deduplicated) before it is acknowledged."""

from __future__ import annotations

import time
from collections.abc import Sequence

from gateway.core.records import ClaimFence, InboxItem
from gateway.store.messages import SET_PLATFORM_IDS, ids_args
from gateway.store.sql import Conn, QueriesBase, query

ITEM = (
    "id, channel, update_id, chat_key, payload, received_at, processed_at, attempts, last_error,"
    " claim"
)
"""The columns of an InboxItem."""
PRUNE_CHUNK = 1000
"""Processed updates `inbox_prune` deletes in one unit of work."""
LAST_RECEIVED_PROBE = 1000
"""The newest inbox rows `inbox_last_received` reads before it looks up a channel whole."""


FENCE_CLAIM = (
    "update inbox set lease_until = ? where id = ? and claimed_by = ? and claim = ?"
    " and processed_at is null"
)
"""The check that a replica still holds its claim, extending its lease; marks: `fence_args`."""


def fence_args(fence: ClaimFence, now: float) -> tuple[float, int, str, int]:
    """The values of `FENCE_CLAIM`'s marks."""
    return now + fence.lease, fence.item_id, fence.holder, fence.claim


class InboxQueries(QueriesBase):
    """Durable, deduplicated queue of raw platform updates."""

    @query
    async def inbox_add(
        self,
        c: Conn,
        channel: str,
        update_id: str,
        chat_key: str,
        payload: str,
        now: float | None = None,
    ) -> InboxItem | None:
        """Store an update with its first attempt counted (it goes to the worker now, and one
        that kills the process has used it: `inbox_started`); None when (channel, update_id)
        was seen before."""
        at = time.time() if now is None else now
        row = await c.fetchrow(
            "insert into inbox (channel, update_id, chat_key, payload, received_at, attempts)"
            " values (?, ?, ?, ?, ?, 1) on conflict (channel, update_id) do nothing"
            f" returning {ITEM}",
            channel,
            update_id,
            chat_key,
            payload,
            at,
        )
        return None if row is None else InboxItem.model_validate({**row, "started": True})

    @query
    async def inbox_pending(self, c: Conn) -> list[InboxItem]:
        """Unprocessed updates in arrival order."""
        rows = await c.fetch(f"select {ITEM} from inbox where processed_at is null order by id")
        return [InboxItem.model_validate(r) for r in rows]

    @query
    async def inbox_done(
        self,
        c: Conn,
        item_id: int,
        *,
        error: str | None = None,
        claim: int | None = None,
        answer_ids: tuple[int, Sequence[str]] | None = None,
    ) -> bool:
        """Mark an update processed (with the error that ended it, if any).

        With `claim` (replicas), only while that claim holds; False when it did not. With
        `answer_ids` (an answer's message id and the platform's ids of what carried it), those
        are written in the same unit, claim or not (`set_platform_ids`): one commit, and on
        PostgreSQL one statement.
        """
        fenced = "" if claim is None else " and claim = ?"
        done = (
            "update inbox set processed_at = ?, last_error = coalesce(?, last_error),"
            f" claimed_by = null, lease_until = null where id = ?{fenced}"
        )
        args = (time.time(), error, item_id, *(() if claim is None else (claim,)))
        if answer_ids is None:
            return await c.execute(done, *args) == 1
        message_id, ids = answer_ids
        if c.dialect.writable_cte:
            return (
                await c.execute(
                    f"with ids as ({SET_PLATFORM_IDS}) {done}", *ids_args(message_id, ids), *args
                )
                == 1
            )
        async with c.transaction():
            await c.execute(SET_PLATFORM_IDS, *ids_args(message_id, ids))
            return await c.execute(done, *args) == 1

    @query
    async def inbox_started(self, c: Conn, item_id: int, *, claim: int | None = None) -> int:
        """Count an attempt before its work starts, so that one killing the process counts too;
        returns the attempts so far (0: `claim` no longer holds)."""
        fenced = "" if claim is None else " and claim = ?"
        attempts = await c.fetchval(
            f"update inbox set attempts = attempts + 1 where id = ?{fenced} returning attempts",
            item_id,
            *(() if claim is None else (claim,)),
        )
        return 0 if attempts is None else int(attempts)

    @query
    async def inbox_failed(
        self, c: Conn, item_id: int, error: str, *, claim: int | None = None
    ) -> int:
        """Record why the attempt `inbox_started` counted failed; returns the attempts so far
        (0: `claim` no longer holds)."""
        fenced = "" if claim is None else " and claim = ?"
        attempts = await c.fetchval(
            f"update inbox set last_error = ? where id = ?{fenced} returning attempts",
            error[:2000],
            item_id,
            *(() if claim is None else (claim,)),
        )
        return 0 if attempts is None else int(attempts)

    @query
    async def inbox_prune(self, c: Conn, older_than: float, limit: int = PRUNE_CHUNK) -> int:
        """Forget up to `limit` processed updates received before `older_than` (epoch
        seconds), oldest first. Callers repeat until fewer are gone: a week
        of a busy gateway's updates deleted in one unit would hold SQLite's one store thread,
        and every answer behind it, for as long as the delete takes."""
        return await c.execute(
            "delete from inbox where id in (select id from inbox where processed_at is not null"
            " and received_at < ? order by id limit ?)",
            older_than,
            c.dialect.limit(limit),
        )

    @query
    async def inbox_last_received(self, c: Conn, channel: str) -> float | None:
        """When the latest stored update of `channel` arrived (None: none is stored).

        The alert watcher asks this every minute, and the inbox keeps a week of updates: a
        `max(received_at)` over the channel's rows read every one of them (on SQLite's one
        store thread, which every answer's writes wait behind). The inbox's ids are its
        arrival order, so the newest `LAST_RECEIVED_PROBE` rows are read first, newest first
        (`channel || ''` keeps the planner on the id, off the (channel, update_id) index);
        only a channel with none among them (quiet while another is busy) is looked up whole.
        """
        value = await c.fetchval(
            "select received_at from inbox where id > (select max(id) from inbox) - ?"
            " and channel || '' = ? order by id desc limit 1",
            LAST_RECEIVED_PROBE,
            channel,
        )
        if value is None:
            value = await c.fetchval(
                "select max(received_at) from inbox where channel = ?", channel
            )
        return None if value is None else float(value)

    @query
    async def inbox_pending_count(self, c: Conn) -> int:
        """How many stored updates wait to be processed."""
        return int(await c.fetchval("select count(*) from inbox where processed_at is null"))
