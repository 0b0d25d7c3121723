"""Repeat notices: what a pass's notice names, and which admin chat got its copy.

The notice and its items are written in the transaction that finishes the run
(`add_repeat_notice`), so a crash before anything was sent leaves a notice the next
sync sends. Each copy is claimed before it is sent and marked delivered after, as cards
are (`gateway.store.cards`): a restart never sends a delivered copy again, and a claim
left by a crash is taken again once older than the caller's `retake_before`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gateway.review.repeats import MAX_ITEMS, NoticeItem, RejectedRepeat, RepeatNotice, grouped
from gateway.store.sql import Conn, QueriesBase, query, transaction

DAY = 86400.0
_ITEMS = (
    "select i.id, i.notice_id, n.run_id, i.proposal_id, i.repeats, i.name, i.description,"
    " i.content, coalesce(p.target, p.name) as slug,"
    " (select coalesce(sum(o.repeats), 0) from repeat_notice_items o"
    " join repeat_notices m on m.id = o.notice_id where o.proposal_id = i.proposal_id"
    " and m.run_id <= n.run_id and m.created_at >= coalesce(p.decided_at, 0)) as total"
    " from repeat_notice_items i join repeat_notices n on n.id = i.notice_id"
    " join proposals p on p.id = i.proposal_id"
)
"""Each item with its run, the rejected proposal's slug, and its repeats since the rejection."""


async def add_repeat_notice(
    c: Conn, run_id: int, repeats: Sequence[RejectedRepeat], at: float
) -> None:
    """The notice of one pass, one item per rejection matched (none when nothing was)."""
    if not repeats:
        return
    notice_id = await c.fetchval(
        "insert into repeat_notices (run_id, created_at) values (?, ?)"
        " on conflict (run_id) do nothing returning id",
        run_id,
        at,
    )
    if notice_id is None:
        return  # this run's notice exists already
    # A rejection already named (not quietly) in the last day is counted, not told again.
    told = {
        r["proposal_id"]
        for r in await c.fetch(
            "select distinct i.proposal_id from repeat_notice_items i"
            " join repeat_notices n on n.id = i.notice_id"
            " where i.quiet = 0 and n.created_at > ? and n.id <> ?",
            at - DAY,
            notice_id,
        )
    }
    await c.executemany(
        "insert into repeat_notice_items"
        " (notice_id, proposal_id, repeats, name, description, content, quiet)"
        " select ?, ?, ?, ?, ?, ?, ? where exists (select 1 from proposals where id = ?)",
        [
            (
                notice_id,
                r.proposal_id,
                n,
                r.name,
                r.description,
                r.content,
                int(r.proposal_id in told),
                r.proposal_id,
            )
            for r, n in grouped(repeats)
        ],
    )
    if all(r.proposal_id in told for r, _ in grouped(repeats)):
        # Nothing new to tell: kept for the counts, never sent.
        await c.execute("update repeat_notices set sent_at = ? where id = ?", at, notice_id)


def _item(row: dict[str, Any]) -> NoticeItem:
    return NoticeItem.model_validate(row)


class NoticeQueries(QueriesBase):
    """Repeat notices, their items and each admin's copy."""

    @query
    async def unsent_repeat_notices(self, c: Conn, since: float) -> list[RepeatNotice]:
        """Notices made at `since` or later that not every admin has got yet, oldest first."""
        rows = await c.fetch(
            "select id, run_id, created_at from repeat_notices"
            " where sent_at is null and created_at >= ? order by id",
            since,
        )
        notices = []
        for row in rows:
            items = [
                _item(r)
                for r in await c.fetch(
                    f"{_ITEMS} where i.notice_id = ? and i.quiet = 0 order by i.id", row["id"]
                )
            ]
            notices.append(
                RepeatNotice(**row, items=items[:MAX_ITEMS], more=max(0, len(items) - MAX_ITEMS))
            )
        return notices

    @query
    async def repeat_notice_item(self, c: Conn, item_id: int) -> NoticeItem | None:
        """One rejection a notice named, with the wording that came back; None if unknown."""
        row = await c.fetchrow(f"{_ITEMS} where i.id = ?", item_id)
        return None if row is None else _item(row)

    @transaction
    async def claim_notice(
        self,
        c: Conn,
        notice_id: int,
        channel: str,
        chat_id: str,
        *,
        retake_before: float,
        now: float,
    ) -> bool:
        """True when the caller may send this copy now: new, or an old claim never delivered."""
        inserted = await c.execute(
            "insert into repeat_notice_copies (notice_id, channel, chat_id, claimed_at)"
            " values (?, ?, ?, ?) on conflict do nothing",
            notice_id,
            channel,
            chat_id,
            now,
        )
        if inserted == 1:
            return True
        retaken = await c.execute(
            "update repeat_notice_copies set claimed_at = ? where notice_id = ?"
            " and channel = ? and chat_id = ? and delivered_at is null and claimed_at < ?",
            now,
            notice_id,
            channel,
            chat_id,
            retake_before,
        )
        return retaken == 1

    @query
    async def notice_delivered(
        self, c: Conn, notice_id: int, channel: str, chat_id: str, message_id: str | None, at: float
    ) -> None:
        """Mark one admin's copy sent."""
        await c.execute(
            "update repeat_notice_copies set delivered_at = ?, platform_message_id = ?"
            " where notice_id = ? and channel = ? and chat_id = ?",
            at,
            message_id,
            notice_id,
            channel,
            chat_id,
        )

    @query
    async def notice_sent(self, c: Conn, notice_id: int, at: float) -> None:
        """Every admin has the notice: later syncs leave it alone (not while a copy that
        another process claimed is still unsent)."""
        await c.execute(
            "update repeat_notices set sent_at = ? where id = ? and sent_at is null"
            " and not exists (select 1 from repeat_notice_copies where notice_id = ?"
            " and delivered_at is null)",
            at,
            notice_id,
            notice_id,
        )

    @query
    async def notices_delivered_to(self, c: Conn, channel: str, chat_id: str, since: float) -> int:
        """Repeat notices delivered to one admin chat at `since` or later."""
        count = await c.fetchval(
            "select count(*) from repeat_notice_copies where channel = ? and chat_id = ?"
            " and delivered_at >= ?",
            channel,
            chat_id,
            since,
        )
        return int(count or 0)
