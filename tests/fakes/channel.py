"""FakeChannel: a channel adapter whose platform is a list, for core and inbox tests."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Sequence
from typing import ClassVar

from gateway.channels.base import Channel, Handler, Ports
from gateway.conversation.models import Audience, Dialect, Profile
from gateway.core.models import Button, ChatRef, IncomingMessage, Reply
from gateway.core.records import InboxItem
from gateway.i18n import ENGLISH, Texts
from gateway.review.buttons import CardSigner
from gateway.review.cards import Card
from gateway.review.proposals import Proposal

FAKE = Dialect(help="help", new="new", refusal="no", thanks_for_comment="thanks")


class FakeChannel(Channel):
    """Updates are JSON `{"chat", "user", "text"}`; sent replies are recorded in order."""

    name: ClassVar[str] = "fake"

    def __init__(self, settings: object) -> None:
        self.profile = Profile(self.name, FAKE, Audience.of((), ()), CardSigner("fake"))
        self.sent: list[tuple[ChatRef, Reply]] = []
        self.fail_sends = 0
        self._cond = asyncio.Condition()
        self.ports: Ports | None = None

    async def start(self, ports: Ports) -> Handler:
        self.ports = ports
        return self.process

    async def process(self, item: InboxItem) -> None:
        assert self.ports is not None, "the app starts the channel before handing it updates"
        data = json.loads(item.payload)
        chat = ChatRef(channel=self.name, chat_id=data["chat"], user_id=data.get("user", "u1"))
        incoming = IncomingMessage(chat=chat, text=data["text"], inbox_id=item.id)
        await self.ports.conversation.answer(incoming, FakeResponder(self, chat))

    async def send(self, chat: ChatRef, reply: Reply) -> list[str]:
        if self.fail_sends:
            self.fail_sends -= 1
            raise ConnectionError("fake platform is down")
        async with self._cond:
            self.sent.append((chat, reply))
            self._cond.notify_all()
        return [f"fake-{len(self.sent)}"]

    async def accept(self, update_id: str, chat: str, text: str, user: str = "u1") -> bool:
        """Store an update the way a webhook would."""
        assert self.ports is not None
        payload = json.dumps({"chat": chat, "user": user, "text": text})
        return await self.ports.intake.accept(self.name, update_id, chat, payload)

    async def wait_sent(self, count: int, timeout: float = 5.0) -> None:
        async with self._cond:
            await asyncio.wait_for(self._cond.wait_for(lambda: len(self.sent) >= count), timeout)

    def texts(self, chat: str | None = None) -> list[str]:
        return [r.text for c, r in self.sent if chat is None or c.chat_id == chat]


class FakeResponder:
    """Answers go to the fake platform's list; a notice is a reply of kind "notice"."""

    def __init__(self, channel: FakeChannel, chat: ChatRef, language: str | None = None) -> None:
        self.channel = channel
        self.chat = chat
        self.texts: Texts = ENGLISH
        self.language_tag = language

    async def look_up_language(self) -> str | None:
        return None

    async def notice(
        self, text: str, *, buttons: Sequence[Button] = (), quote: bool = False
    ) -> None:
        await self.channel.send(self.chat, Reply(text=text, kind="notice", buttons=list(buttons)))

    async def acknowledge(self, text: str, *, courtesy: bool = False) -> None:
        if not courtesy:
            await self.notice(text)

    async def close_buttons(self) -> None:
        """The fake channel's messages are not edited."""

    @contextlib.asynccontextmanager
    async def working(self) -> AsyncIterator[None]:
        yield

    async def deliver(self, reply: Reply) -> list[str]:
        if reply.delivered_ids:
            return list(reply.delivered_ids)  # the fake platform sends an answer whole or not
        return await self.channel.send(self.chat, reply)

    async def show_rating(self, answer_id: int, rating: int) -> None:
        return None

    async def ask_comment(self, answer_id: int) -> str | None:
        await self.notice("what went wrong?")
        return None

    async def ask_reason(self, proposal: Proposal, decided: str) -> str | None:
        await self.notice(decided)
        return None

    async def reviewer_name(self) -> str | None:
        return None

    async def is_chat_admin(self) -> bool:
        return False

    def cards_per_listing(self, pending: int) -> int:
        return pending

    async def show_cards(self, cards: Sequence[Card], more: str | None) -> list[str | None]:
        return [None for _ in cards]

    async def show_card(self, card: Card) -> None:
        return None

    async def send_diff(self, proposal: Proposal, diff: str) -> None:
        await self.notice(diff)
