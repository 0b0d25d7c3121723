"""How Loopchat answers in a chat: every text is one message, buttons under it, which an edit
changes (a rating shown on the pressed answer).

Its responder offers a preview of the answer as the model writes it, which Loopchat shows
as a "draft:" message; its spec declares no drafts, so the conversation layer never fills it.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import Any

import aiohttp

from gateway.channels.api import (
    ENGLISH,
    Button,
    Card,
    ChannelError,
    ChatRef,
    DeliveryLog,
    PartialText,
    Proposal,
    Reply,
    Texts,
    rating_buttons,
)


class LoopClient:
    """The platform's API: one call, `send`."""

    def __init__(self, url: str, token: str) -> None:
        self.url, self.token = url, token
        self.http: aiohttp.ClientSession | None = None

    async def open(self) -> None:
        self.http = aiohttp.ClientSession()

    async def close(self) -> None:
        if self.http is not None:
            await self.http.close()

    async def send(self, chat: str, text: str, buttons: Sequence[Button] = ()) -> str:
        body = {"chat": chat, "text": text, "buttons": _buttons(buttons)}
        return str((await self._call("/send", body))["id"])

    async def edit(self, message: str, buttons: Sequence[Button]) -> None:
        await self._call("/edit", {"id": message, "buttons": _buttons(buttons)})

    async def _call(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        assert self.http is not None, "the client is opened when the channel starts"
        headers = {"Authorization": f"Bearer {self.token}"}
        try:
            async with self.http.post(f"{self.url}{path}", json=body, headers=headers) as resp:
                if resp.status != 200:
                    raise ChannelError(f"Loopchat answered HTTP {resp.status}")
                answer: dict[str, Any] = await resp.json()
                return answer
        except aiohttp.ClientError as exc:
            raise ChannelError(f"Loopchat is unreachable: {exc}") from exc


def _buttons(buttons: Sequence[Button]) -> list[dict[str, str]]:
    return [{"label": b.label, "data": f"{b.action}:{b.value}"} for b in buttons]


class LoopResponder:
    """The conversation layer's `Responder` for one Loopchat update."""

    def __init__(
        self, client: LoopClient, chat: ChatRef, log: DeliveryLog, pressed: str | None = None
    ) -> None:
        self.client = client
        self.chat = chat
        self.log = log
        self.pressed = pressed
        """The message whose button was pressed, for a press."""
        self.texts: Texts = ENGLISH

    @property
    def language_tag(self) -> str | None:
        return None

    async def look_up_language(self) -> str | None:
        return None

    async def _say(self, text: str, buttons: Sequence[Button] = ()) -> str:
        return await self.client.send(self.chat.chat_id, text, buttons)

    async def notice(
        self, text: str, *, buttons: Sequence[Button] = (), quote: bool = False
    ) -> None:
        await self._say(text, buttons)

    async def acknowledge(self, text: str, *, courtesy: bool = False) -> None:
        if not courtesy:
            await self._say(text)

    async def close_buttons(self) -> None:
        """Loopchat's buttons are data on a message; nothing is edited."""

    @contextlib.asynccontextmanager
    async def working(self) -> AsyncIterator[PartialText]:
        partial = PartialText()
        yield partial
        if partial.visible():  # filled only where the spec declares drafts
            await self._say(f"draft: {partial.visible()}")

    async def deliver(self, reply: Reply) -> list[str]:
        if reply.delivered_ids:
            return list(reply.delivered_ids)  # one message: sent whole or not at all
        ids = [await self._say(reply.text, reply.buttons)]
        if reply.message_id is not None:
            await self.log.set_platform_ids(reply.message_id, ids)  # the channel records them
        return ids

    async def show_rating(self, answer_id: int, rating: int) -> None:
        if self.pressed is None:
            return
        shown = [
            Button(
                label=f"{b.label} ✓" if b.value.endswith(f"{rating:+d}") else b.label,
                action=b.action,
                value=b.value,
            )
            for b in rating_buttons(answer_id)
        ]
        await self.client.edit(self.pressed, shown)

    async def ask_comment(self, answer_id: int) -> str | None:
        await self._say(self.texts("What went wrong? Tell me in your next message (optional)."))
        return None  # the next text is the answer

    async def ask_reason(self, proposal: Proposal, decided: str) -> str | None:
        await self._say(decided)
        return None

    async def reviewer_name(self) -> str | None:
        return None

    def cards_per_listing(self, pending: int) -> int:
        return pending

    async def is_chat_admin(self) -> bool:
        return False  # a loopback chat names no group admins: Skillgate's own admins decide

    async def show_cards(self, cards: Sequence[Card], more: str | None) -> list[str | None]:
        ids: list[str | None] = [await self._say(card.title()) for card in cards]
        if more:
            await self._say(more)
        return ids

    async def show_card(self, card: Card) -> None:
        return None

    async def send_diff(self, proposal: Proposal, diff: str) -> None:
        await self._say(diff)
