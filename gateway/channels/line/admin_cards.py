"""Proposal cards and repeat notices pushed to LINE admins.

LINE cannot edit a sent message, so a decision reaches each LINE admin as a short pushed
notice instead (except the admin who decided, who was answered directly). Every push has
a stable delivery reference, so the outbox's stored retry key makes a retry after a crash
a no-op at LINE (409) rather than a second message. The Flex bubbles are rendered by
`cards` with line-bot-sdk's models, which are loaded (in a thread) for the first card:
a gateway whose admins get no card never loads the SDK.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Collection
from types import ModuleType
from typing import TYPE_CHECKING

from gateway.channels.api import (
    Card,
    CardDelivery,
    CardSigner,
    ChannelError,
    NoticeView,
    RepeatNotice,
    Texts,
    notice_view,
)
from gateway.channels.line.client import LineMessage, text_messages
from gateway.channels.line.delivery import LineOutbox
from gateway.channels.line.spec import SPEC

if TYPE_CHECKING:
    from gateway.channels.line.cards import CardBubbles

RENDERER = "gateway.channels.line.cards"


class FlexCards:
    """Cards and repeat notices as Flex messages' JSON, the renderer loaded on first use."""

    def __init__(self, signer: CardSigner) -> None:
        self.signer = signer
        self._module: ModuleType | None = None
        self._bubbles: CardBubbles | None = None

    async def _load(self) -> ModuleType:
        if self._module is None:
            # In a thread: the SDK's modules take most of a second to import.
            module = await asyncio.to_thread(importlib.import_module, RENDERER)
            self._bubbles, self._module = module.CardBubbles(self.signer), module
        return self._module

    async def message(self, card: Card) -> LineMessage:
        """The card as a Flex message; buttons only while the proposal is pending."""
        await self._load()
        assert self._bubbles is not None
        return dict(self._bubbles.message(card).to_dict())

    async def repeats(self, view: NoticeView) -> LineMessage:
        """A repeat notice as a Flex message, with its buttons."""
        module = await self._load()
        return dict(module.repeats_message(view).to_dict())


class LineCards:
    """Pushes card bubbles, and decision notices, to LINE admins."""

    channel = SPEC.name

    def __init__(self, outbox: LineOutbox, bubbles: FlexCards, admins: Collection[str]) -> None:
        self.outbox = outbox
        self.bubbles = bubbles
        self._admins = list(admins)

    def admins(self) -> list[str]:
        return list(self._admins)

    async def look_up_language(self, user_id: str) -> str | None:
        return (await self.outbox.client.profile(user_id)).language

    async def send_card(self, chat_id: str, card: Card) -> str | None:
        message = await self.bubbles.message(card)
        ids = await self.outbox.deliver_messages(
            chat_id, [message], f"card:{card.proposal.id}:{chat_id}"
        )
        return ids[0] if ids else None

    async def send_notice(self, chat_id: str, text: str, ref: str) -> None:
        await self.outbox.deliver_messages(chat_id, text_messages([text]), ref)

    async def send_repeats(self, chat_id: str, notice: RepeatNotice, texts: Texts) -> str | None:
        view = notice_view(notice, self.bubbles.signer, texts)
        ref = f"repeats:{notice.id}:{chat_id}"
        ids = await self.outbox.deliver_messages(chat_id, [await self.bubbles.repeats(view)], ref)
        return ids[0] if ids else None

    async def edit_card(self, copy: CardDelivery, card: Card) -> None:
        """Never called: the spec says LINE cannot edit, so a decision comes as a notice."""
        raise ChannelError("LINE cannot edit a sent message")
