"""Replies fenced by the inbox claim: a replica whose claim is gone says nothing more.

With several replicas, the update being handled is claimed under a lease; a replica that
stalls past it may find the update taken over by another, which answers it. Every reply
made for the update is therefore preceded by a check that this replica still holds the
claim it started with (the check also extends the lease, so the send that follows has a
whole lease to finish in). One process without replicas holds no claims: nothing to check.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from gateway.conversation.ports import Responder
from gateway.core.models import Button, Reply
from gateway.core.records import InboxItem
from gateway.core.scheduled import Fence
from gateway.i18n import Texts
from gateway.review.cards import Card
from gateway.review.proposals import Proposal


class Claims(Protocol):
    """Where the inbox says whether this process may still act for an update."""

    async def hold(self, item: InboxItem) -> None:
        """Return while the claim on `item` holds (extending it); raise ClaimLost if not."""
        ...


class FencedResponder:
    """A Responder whose every send first checks the claim on its update.

    Only what says something is fenced; what reads (the chat, its language, the reviewer's
    name, how many cards fit) or only shows work ("typing…" and drafts are no message: the
    answer after them is fenced) passes through to the platform's own responder.
    """

    def __init__(self, out: Responder, claims: Claims, item: InboxItem) -> None:
        self.out = out
        self.claims = claims
        self.item = item

    def __getattr__(self, name: str) -> Any:
        if name == "out":  # not set yet (a copy being made): nothing to pass through to
            raise AttributeError(name)
        return getattr(self.out, name)  # the unfenced rest of `Responder`

    @property
    def texts(self) -> Texts:
        return self.out.texts

    @texts.setter
    def texts(self, texts: Texts) -> None:
        self.out.texts = texts  # the platform's responder says its own texts in them

    async def _hold(self) -> None:
        await self.claims.hold(self.item)

    async def notice(
        self, text: str, *, buttons: Sequence[Button] = (), quote: bool = False
    ) -> None:
        await self._hold()
        await self.out.notice(text, buttons=buttons, quote=quote)

    async def acknowledge(self, text: str, *, courtesy: bool = False) -> None:
        await self._hold()
        await self.out.acknowledge(text, courtesy=courtesy)

    async def close_buttons(self) -> None:
        await self._hold()
        await self.out.close_buttons()

    async def deliver(self, reply: Reply) -> list[str]:
        await self._hold()
        return await self.out.deliver(reply)

    async def show_rating(self, answer_id: int, rating: int) -> None:
        await self._hold()
        await self.out.show_rating(answer_id, rating)

    async def ask_comment(self, answer_id: int) -> str | None:
        await self._hold()
        return await self.out.ask_comment(answer_id)

    async def ask_reason(self, proposal: Proposal, decided: str) -> str | None:
        await self._hold()
        return await self.out.ask_reason(proposal, decided)

    async def show_cards(self, cards: Sequence[Card], more: str | None) -> list[str | None]:
        await self._hold()
        return await self.out.show_cards(cards, more)

    async def show_card(self, card: Card) -> None:
        await self._hold()
        await self.out.show_card(card)

    async def send_diff(self, proposal: Proposal, diff: str) -> None:
        await self._hold()
        await self.out.send_diff(proposal, diff)


class TaskFencedResponder(FencedResponder):
    """A Responder for a scheduled task's occurrence: every send first checks that this
    process still owns the occurrence (`Fence`, the task worker's claim)."""

    def __init__(self, out: Responder, fence: Fence) -> None:
        self.out = out
        self.fence = fence

    async def _hold(self) -> None:
        await self.fence()
