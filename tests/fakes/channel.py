"""FakeChannel: a channel adapter whose platform is a list, for core and inbox tests."""

from __future__ import annotations

import asyncio
import json
from typing import ClassVar

from gateway.channels.base import Channel
from gateway.core.models import ChatRef, IncomingMessage, Reply
from gateway.core.records import InboxItem


class FakeChannel(Channel):
    """Updates are JSON `{"chat", "user", "text"}`; sent replies are recorded in order."""

    name: ClassVar[str] = "fake"

    def __init__(self, settings: object) -> None:
        super().__init__(settings)  # type: ignore[arg-type]
        self.sent: list[tuple[ChatRef, Reply]] = []
        self.fail_sends = 0
        self._cond = asyncio.Condition()

    async def process(self, item: InboxItem) -> None:
        data = json.loads(item.payload)
        chat = ChatRef(channel=self.name, chat_id=data["chat"], user_id=data.get("user", "u1"))
        await self.answer(IncomingMessage(chat=chat, text=data["text"], inbox_id=item.id))

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
        payload = json.dumps({"chat": chat, "user": user, "text": text})
        return await self.services.accept(self.name, update_id, chat, payload)

    async def wait_sent(self, count: int, timeout: float = 5.0) -> None:
        async with self._cond:
            await asyncio.wait_for(self._cond.wait_for(lambda: len(self.sent) >= count), timeout)

    def texts(self, chat: str | None = None) -> list[str]:
        return [r.text for c, r in self.sent if chat is None or c.chat_id == chat]
