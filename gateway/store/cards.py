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

from pydantic import BaseModel
from sqlite_utils import Database

from gateway.store.base import QueriesBase, one


class CardDelivery(BaseModel):
    """One admin's copy of a proposal card."""

    proposal_id: int
    channel: str
    chat_id: str
    platform_message_id: str | None = None
    claimed_at: float
    delivered_at: float | None = None
    shown_status: str | None = None
    shown_reason: str | None = None


class CardQueries(QueriesBase):
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

        def claim(db: Database) -> bool:
            with db.atomic():
                cur = db.execute(
                    "insert or ignore into card_deliveries (proposal_id, channel, chat_id,"
                    " claimed_at) values (?, ?, ?, ?)",
                    [proposal_id, channel, chat_id, at],
                )
                if cur.rowcount == 1:
                    return True
                cur = db.execute(
                    "update card_deliveries set claimed_at = ? where proposal_id = ?"
                    " and channel = ? and chat_id = ? and delivered_at is null"
                    " and claimed_at < ?",
                    [at, proposal_id, channel, chat_id, retake_before],
                )
                return cur.rowcount == 1

        return await self.run(claim)

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
        await self.run(
            lambda db: db.execute(
                "insert into card_deliveries (proposal_id, channel, chat_id, platform_message_id,"
                " claimed_at, delivered_at, shown_status, shown_reason)"
                " values (?, ?, ?, ?, ?, ?, ?, ?)"
                " on conflict (proposal_id, channel, chat_id) do update set"
                " platform_message_id = coalesce(excluded.platform_message_id,"
                " platform_message_id), delivered_at = excluded.delivered_at,"
                " shown_status = excluded.shown_status, shown_reason = excluded.shown_reason",
                [proposal_id, channel, chat_id, message_id, at, at, status, reason],
            )
        )

    async def card_copies(self, proposal_id: int) -> list[CardDelivery]:
        """Every delivered copy of a proposal's card."""
        return await self.run(
            lambda db: [
                CardDelivery.model_validate(dict(r))
                for r in db.query(
                    "select * from card_deliveries where proposal_id = ?"
                    " and delivered_at is not null order by id",
                    [proposal_id],
                )
            ]
        )

    async def outdated_card_copies(self) -> list[CardDelivery]:
        """Delivered copies that do not show their proposal's current status or reason."""
        return await self.run(
            lambda db: [
                CardDelivery.model_validate(dict(r))
                for r in db.query(
                    "select c.* from card_deliveries c join proposals p on p.id = c.proposal_id"
                    " where c.delivered_at is not null and (p.status is not c.shown_status"
                    " or p.reason is not c.shown_reason) order by c.id"
                )
            ]
        )

    async def card_shown(
        self, proposal_id: int, channel: str, chat_id: str, status: str, reason: str | None
    ) -> None:
        """Record what a copy shows after it was updated."""
        await self.run(
            lambda db: db.execute(
                "update card_deliveries set shown_status = ?, shown_reason = ?"
                " where proposal_id = ? and channel = ? and chat_id = ?",
                [status, reason, proposal_id, channel, chat_id],
            )
        )

    async def set_reviewer_name(self, decider: str, name: str, now: float | None = None) -> None:
        """Remember how to show a decider ("telegram:123") to people."""
        at = time.time() if now is None else now
        await self.run(
            lambda db: db.execute(
                "insert into reviewer_names (decider, name, updated_at) values (?, ?, ?)"
                " on conflict (decider) do update set name = excluded.name,"
                " updated_at = excluded.updated_at",
                [decider, name, at],
            )
        )

    async def reviewer_name(self, decider: str) -> str | None:
        """The remembered name of a decider, if any."""
        row = await self.run(
            lambda db: one(db, "select name from reviewer_names where decider = ?", [decider])
        )
        return None if row is None else str(row["name"])

    async def reviewer_names(self, deciders: Sequence[str]) -> dict[str, str]:
        """Remembered names of several deciders."""
        wanted = list(dict.fromkeys(deciders))
        if not wanted:
            return {}
        marks = ", ".join("?" for _ in wanted)
        return await self.run(
            lambda db: {
                str(r["decider"]): str(r["name"])
                for r in db.query(
                    f"select decider, name from reviewer_names where decider in ({marks})", wanted
                )
            }
        )
