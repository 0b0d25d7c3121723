"""Proposal cards sent to admins: which chat got which card, and what each copy shows now.

A card is claimed (row written) before it is sent and marked delivered after,
so a restart never sends a delivered card again. A claim left without its
delivery mark (a crash or a failed send) can be taken again once it is older
than the caller's `retake_before`, so one process never races another that is
still sending.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from gateway.core.records import LanguageState
from gateway.review.ports import CardDelivery
from gateway.store.languages import language_in
from gateway.store.sql import Conn, QueriesBase, query, transaction


class CardQueries(QueriesBase):
    """Card deliveries and reviewers' readable names."""

    @transaction
    async def claim_card(
        self,
        c: Conn,
        proposal_id: int,
        channel: str,
        chat_id: str,
        *,
        retake_before: float,
        now: float | None = None,
    ) -> bool:
        """True when the caller may send this card now: new, or an old claim never delivered."""
        at = time.time() if now is None else now
        inserted = await c.execute(
            "insert into card_deliveries (proposal_id, channel, chat_id, claimed_at)"
            " values (?, ?, ?, ?) on conflict do nothing",
            proposal_id,
            channel,
            chat_id,
            at,
        )
        if inserted == 1:
            return True
        # A concurrent claimer waits for the row, then sees the winner's fresh claim.
        retaken = await c.execute(
            "update card_deliveries set claimed_at = ? where proposal_id = ?"
            " and channel = ? and chat_id = ? and delivered_at is null"
            " and claimed_at < ?",
            at,
            proposal_id,
            channel,
            chat_id,
            retake_before,
        )
        return retaken == 1

    @query
    async def card_delivered(
        self,
        c: Conn,
        proposal_id: int,
        channel: str,
        chat_id: str,
        message_id: str | None,
        *,
        status: str,
        reason: str | None,
        now: float | None = None,
    ) -> None:
        """Mark a card sent (or replace the copy an admin sees), with what it shows."""
        at = time.time() if now is None else now
        await c.execute(
            "insert into card_deliveries (proposal_id, channel, chat_id, platform_message_id,"
            " claimed_at, delivered_at, shown_status, shown_reason)"
            " values (?, ?, ?, ?, ?, ?, ?, ?)"
            " on conflict (proposal_id, channel, chat_id) do update set"
            " platform_message_id = coalesce(excluded.platform_message_id,"
            " card_deliveries.platform_message_id), delivered_at = excluded.delivered_at,"
            " shown_status = excluded.shown_status, shown_reason = excluded.shown_reason",
            proposal_id,
            channel,
            chat_id,
            message_id,
            at,
            at,
            status,
            reason,
        )

    @query
    async def card_copies(self, c: Conn, proposal_id: int) -> list[CardDelivery]:
        """Every delivered copy of a proposal's card."""
        rows = await c.fetch(
            "select * from card_deliveries where proposal_id = ?"
            " and delivered_at is not null order by id",
            proposal_id,
        )
        return [CardDelivery.model_validate(r) for r in rows]

    @query
    async def outdated_card_copies(self, c: Conn) -> list[CardDelivery]:
        """Delivered copies that do not show their proposal's current status or reason."""
        rows = await c.fetch(
            "select c.* from card_deliveries c join proposals p on p.id = c.proposal_id"
            f" where c.delivered_at is not null and ({_differ('p.status', 'c.shown_status')}"
            f" or {_differ('p.reason', 'c.shown_reason')}) order by c.id"
        )
        return [CardDelivery.model_validate(r) for r in rows]

    @query
    async def card_copies_and_languages(
        self, c: Conn, proposal_id: int
    ) -> list[tuple[CardDelivery, LanguageState]]:
        """Every delivered copy of a proposal's card, with the language state of its admin
        (whose private chat it is in: the chat id is the admin's user id)."""
        rows = await c.fetch(
            "select c.*, (select language from chat_languages l"
            " where l.channel = c.channel and l.chat_id = c.chat_id) as chosen,"
            " u.tag, u.ok, u.checked_at from card_deliveries c"
            " left join user_languages u on u.channel = c.channel and u.user_id = c.chat_id"
            " where c.proposal_id = ? and c.delivered_at is not null order by c.id",
            proposal_id,
        )
        return [(CardDelivery.model_validate(r), language_in(r)) for r in rows]

    @query
    async def cards_shown(
        self,
        c: Conn,
        proposal_id: int,
        chats: Sequence[tuple[str, str]],
        status: str,
        reason: str | None,
    ) -> None:
        """Record what copies show after they were updated, each by (channel, chat id)."""
        if not chats:
            return
        await c.executemany(
            "update card_deliveries set shown_status = ?, shown_reason = ?"
            " where proposal_id = ? and channel = ? and chat_id = ?",
            [(status, reason, proposal_id, channel, chat_id) for channel, chat_id in chats],
        )

    @query
    async def set_reviewer_name(
        self, c: Conn, decider: str, name: str, now: float | None = None
    ) -> None:
        """Remember how to show a decider ("telegram:123") to people."""
        await remember_name(c, decider, name, time.time() if now is None else now)

    @query
    async def reviewer_name(self, c: Conn, decider: str) -> str | None:
        """The remembered name of a decider, if any."""
        name = await c.fetchval("select name from reviewer_names where decider = ?", decider)
        return None if name is None else str(name)


def _differ(a: str, b: str) -> str:
    """`a is distinct from b`, also on SQLite before 3.39 (PostgreSQL lacks `is not` on values)."""
    return f"not coalesce({a} = {b}, {a} is null and {b} is null)"


async def remember_name(c: Conn, decider: str, name: str, at: float) -> None:
    """How a decider is shown to people, as their platform last gave it."""
    await c.execute(
        "insert into reviewer_names (decider, name, updated_at) values (?, ?, ?)"
        " on conflict (decider) do update set name = excluded.name,"
        " updated_at = excluded.updated_at",
        decider,
        name,
        at,
    )
