"""Proposal cards sent to admins, on PostgreSQL: which chat got which card, what each shows.

A card is claimed (row written) before it is sent and marked delivered after,
so a restart never sends a delivered card again. A claim left without its
delivery mark (a crash or a failed send) can be taken again once it is older
than the caller's `retake_before`, so one process never races another that is
still sending.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from gateway.store.cards import CardDelivery
from gateway.store.postgres.base import PgQueriesBase, affected


class PgCardQueries(PgQueriesBase):
    """Card deliveries and reviewers' readable names."""

    async def claim_card(
        self,
        proposal_id: int,
        channel: str,
        chat_id: str,
        *,
        retake_before: float,
        now: float | None = None,
    ) -> bool:
        """True when the caller may send this card now: new, or an old claim never delivered."""
        at = time.time() if now is None else now
        async with self._tx() as conn:
            status = await conn.execute(
                "insert into card_deliveries (proposal_id, channel, chat_id, claimed_at)"
                " values ($1, $2, $3, $4) on conflict do nothing",
                proposal_id,
                channel,
                chat_id,
                at,
            )
            if affected(status) == 1:
                return True
            # A concurrent claimer waits for the row, then sees the winner's fresh claim.
            status = await conn.execute(
                "update card_deliveries set claimed_at = $1 where proposal_id = $2"
                " and channel = $3 and chat_id = $4 and delivered_at is null"
                " and claimed_at < $5",
                at,
                proposal_id,
                channel,
                chat_id,
                retake_before,
            )
            return affected(status) == 1

    async def card_delivered(
        self,
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
        await self._execute(
            "insert into card_deliveries (proposal_id, channel, chat_id, platform_message_id,"
            " claimed_at, delivered_at, shown_status, shown_reason)"
            " values ($1, $2, $3, $4, $5, $5, $6, $7)"
            " on conflict (proposal_id, channel, chat_id) do update set"
            " platform_message_id = coalesce(excluded.platform_message_id,"
            " card_deliveries.platform_message_id), delivered_at = excluded.delivered_at,"
            " shown_status = excluded.shown_status, shown_reason = excluded.shown_reason",
            proposal_id,
            channel,
            chat_id,
            message_id,
            at,
            status,
            reason,
        )

    async def card_copies(self, proposal_id: int) -> list[CardDelivery]:
        """Every delivered copy of a proposal's card."""
        rows = await self._fetch(
            "select * from card_deliveries where proposal_id = $1"
            " and delivered_at is not null order by id",
            proposal_id,
        )
        return [CardDelivery.model_validate(r) for r in rows]

    async def outdated_card_copies(self) -> list[CardDelivery]:
        """Delivered copies that do not show their proposal's current status or reason."""
        rows = await self._fetch(
            "select c.* from card_deliveries c join proposals p on p.id = c.proposal_id"
            " where c.delivered_at is not null and (p.status is distinct from c.shown_status"
            " or p.reason is distinct from c.shown_reason) order by c.id"
        )
        return [CardDelivery.model_validate(r) for r in rows]

    async def card_shown(
        self, proposal_id: int, channel: str, chat_id: str, status: str, reason: str | None
    ) -> None:
        """Record what a copy shows after it was updated."""
        await self._execute(
            "update card_deliveries set shown_status = $1, shown_reason = $2"
            " where proposal_id = $3 and channel = $4 and chat_id = $5",
            status,
            reason,
            proposal_id,
            channel,
            chat_id,
        )

    async def set_reviewer_name(self, decider: str, name: str, now: float | None = None) -> None:
        """Remember how to show a decider ("telegram:123") to people."""
        at = time.time() if now is None else now
        await self._execute(
            "insert into reviewer_names (decider, name, updated_at) values ($1, $2, $3)"
            " on conflict (decider) do update set name = excluded.name,"
            " updated_at = excluded.updated_at",
            decider,
            name,
            at,
        )

    async def reviewer_name(self, decider: str) -> str | None:
        """The remembered name of a decider, if any."""
        name = await self._fetchval("select name from reviewer_names where decider = $1", decider)
        return None if name is None else str(name)

    async def reviewer_names(self, deciders: Sequence[str]) -> dict[str, str]:
        """Remembered names of several deciders."""
        wanted = list(dict.fromkeys(deciders))
        if not wanted:
            return {}
        rows = await self._fetch(
            "select decider, name from reviewer_names where decider = any($1::text[])", wanted
        )
        return {str(r["decider"]): str(r["name"]) for r in rows}
