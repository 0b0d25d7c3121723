"""One driver per platform: the real app over HTTP, its platform a loopback fake.

A driver speaks for the people in a chat (messages, replies, button presses) and
reads what the platform received, so one contract test runs on every channel. A rig
starts the gateway with that platform alone and yields its driver; `RIGS` holds the
built-in platforms' rigs (a test fails when one of the registry's lacks one). A platform
from another package runs the contract with its own rig (see tests/channels/loopchat/).
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Protocol

from aiohttp import ClientResponse
from aiohttp.test_utils import TestClient

from gateway.app import PARTS
from gateway.config import Settings
from gateway.conversation.models import Dialect
from gateway.runtime.assembly import Parts
from tests.fakes.line_api import USER_ID, postback_event, text_event
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import html_to_plain, make_callback_update, make_text_update
from tests.line_support import GROUP_ID, LineRig, line_rig, quick_reply_data
from tests.telegram_harness import SECRET, Gateway, telegram_gateway

MakeSettings = Callable[..., Settings]


class Driver(Protocol):
    """What the contract needs from a platform's test rig."""

    name: str
    dialect: Dialect
    user: str
    """The platform id of the default user (who is also the 1:1 chat)."""
    other: str
    """Another user, in their own 1:1 chat."""

    @property
    def client(self) -> TestClient: ...

    @property
    def parts(self) -> Parts: ...

    async def say(
        self, text: str, *, user: str | None = None, group: bool = False, addressed: bool = True
    ) -> None:
        """A text from `user` (default: `self.user`), handled to the end."""
        ...

    async def answer_question(self, text: str, *, user: str | None = None) -> None:
        """Answer the question the bot asked last (Telegram: reply to its prompt)."""
        ...

    async def press(self, data: str, *, user: str | None = None) -> None:
        """Press a button carrying `data` on the last answer in the user's chat."""
        ...

    async def redeliver_last(self) -> ClientResponse:
        """Post the last webhook again, exactly as before."""
        ...

    async def forged(self) -> ClientResponse:
        """Post a message webhook that fails verification."""
        ...

    def texts(self, user: str | None = None) -> list[str]:
        """Plain texts the platform delivered to the user's chat (or the group's)."""
        ...

    def rating_data(self, user: str | None = None) -> list[str]:
        """The button data under the last answer in the user's chat."""
        ...

    def button_data(self, user: str | None = None) -> list[list[str]]:
        """The button data of every message with buttons in the user's chat, oldest first."""
        ...


_ids = itertools.count(50_000)
GROUP = -100777


class TelegramDriver:
    name = "telegram"
    user, other = "1001", "1002"

    def __init__(self, gw: Gateway) -> None:
        from gateway.channels.telegram.dialect import TELEGRAM

        self.gw = gw
        self.dialect = TELEGRAM
        self._last: dict[str, Any] | None = None

    @property
    def client(self) -> TestClient:
        return self.gw.client

    @property
    def parts(self) -> Parts:
        return self.gw.app[PARTS]

    async def _post(self, update: dict[str, Any]) -> None:
        self._last = update
        await self.gw.deliver(update)

    async def say(
        self, text: str, *, user: str | None = None, group: bool = False, addressed: bool = True
    ) -> None:
        uid = int(user or self.user)
        if group and addressed:
            text = f"@skillgate_test_bot {text}"
        chat, kind = (GROUP, "supergroup") if group else (uid, "private")
        entities = None
        if group and addressed:
            entities = [{"type": "mention", "offset": 0, "length": len("@skillgate_test_bot")}]
        update = make_text_update(
            next(_ids),
            text,
            chat_id=chat,
            user_id=uid,
            chat_type=kind,
            entities=entities,
            first_name="Bob" if str(uid) == self.other else "Alice",
        )
        await self._post(update)

    async def answer_question(self, text: str, *, user: str | None = None) -> None:
        uid = int(user or self.user)
        prompt = self.gw.fake.calls_of("sendMessage")[-1]
        assert "force_reply" in str(prompt.params.get("reply_markup")), prompt.params
        replied = self._messages(uid)[-1]  # the prompt is the last message the bot sent
        update = make_text_update(next(_ids), text, chat_id=uid, user_id=uid)
        update["message"]["reply_to_message"] = replied
        await self._post(update)

    async def press(self, data: str, *, user: str | None = None) -> None:
        uid = int(user or self.user)
        answer = self._last_answer(uid)
        update = make_callback_update(
            next(_ids), data, chat_id=uid, user_id=uid, message_id=answer["message_id"]
        )
        await self._post(update)

    async def redeliver_last(self) -> ClientResponse:
        assert self._last is not None
        resp = await self.gw.post(self._last)
        await self.gw.idle()
        return resp

    async def forged(self) -> ClientResponse:
        return await self.gw.post(make_text_update(next(_ids), "hi"), secret=SECRET + "x")

    def texts(self, user: str | None = None) -> list[str]:
        chat = int(user) if user is not None else int(self.user)
        return [html_to_plain(t) for t in self.gw.fake.sent_texts(chat)]

    def _messages(self, chat: int) -> list[dict[str, Any]]:
        """What the bot sent to a chat, oldest first."""
        return [m for (c, _), m in sorted(self.gw.fake.messages.items()) if c == chat]

    def _last_answer(self, chat: int) -> dict[str, Any]:
        answers = [m for m in self._messages(chat) if m.get("reply_markup")]
        assert answers, f"no answer with buttons in chat {chat}"
        return answers[-1]

    def rating_data(self, user: str | None = None) -> list[str]:
        markup = self._last_answer(int(user or self.user))["reply_markup"]
        return [b["callback_data"] for b in markup["inline_keyboard"][0]]

    def button_data(self, user: str | None = None) -> list[list[str]]:
        messages = self._messages(int(user or self.user))
        return [
            [b["callback_data"] for row in m["reply_markup"]["inline_keyboard"] for b in row]
            for m in messages
            if m.get("reply_markup")
        ]


class LineDriver:
    name = "line"
    user, other = USER_ID, "U" + "2" * 32

    def __init__(self, rig: LineRig) -> None:
        from gateway.channels.line.dialect import LINE

        self.rig = rig
        self.dialect = LINE
        self._last: tuple[dict[str, Any], ...] = ()

    @property
    def client(self) -> TestClient:
        return self.rig.http

    @property
    def parts(self) -> Parts:
        return self.rig.http.app[PARTS]

    async def _post(self, event: dict[str, Any]) -> None:
        self._last = (event,)
        await self.rig.deliver(event)

    async def say(
        self, text: str, *, user: str | None = None, group: bool = False, addressed: bool = True
    ) -> None:
        uid = user or self.user
        to = GROUP_ID if group else uid
        event = text_event(
            f"@FakeBot {text}" if group and addressed else text,
            user_id=uid,
            group_id=GROUP_ID if group else None,
            reply_token=self.rig.token(to),
            mention_self=group and addressed,
        )
        await self._post(event)

    async def answer_question(self, text: str, *, user: str | None = None) -> None:
        await self.say(text, user=user)

    async def press(self, data: str, *, user: str | None = None) -> None:
        uid = user or self.user
        await self._post(postback_event(data, user_id=uid, reply_token=self.rig.token(uid)))

    async def redeliver_last(self) -> ClientResponse:
        resp = await self.rig.post(*self._last)
        await self.rig.idle()
        return resp

    async def forged(self) -> ClientResponse:
        return await self.rig.post(text_event("hi"), signature="bm90LXRoZS1zaWduYXR1cmU=")

    def texts(self, user: str | None = None) -> list[str]:
        return self.rig.fake.delivered_texts(user or self.user)

    def rating_data(self, user: str | None = None) -> list[str]:
        answers = [
            m for m in self.rig.fake.delivered_messages(user or self.user) if quick_reply_data(m)
        ]
        return quick_reply_data(answers[-1])

    def button_data(self, user: str | None = None) -> list[list[str]]:
        delivered = self.rig.fake.delivered_messages(user or self.user)
        return [quick_reply_data(m) for m in delivered if quick_reply_data(m)]


class Rig(Protocol):
    """Starts the gateway with one platform, driven through its fake, and yields its driver.

    `only_other` sets the allowlist to the other user alone; `settings` are added.
    """

    def __call__(
        self,
        make_settings: MakeSettings,
        llm: FakeOpenAI,
        *,
        only_other: bool = False,
        **settings: Any,
    ) -> AbstractAsyncContextManager[Driver]: ...


@asynccontextmanager
async def telegram_rig(
    make_settings: MakeSettings, llm: FakeOpenAI, *, only_other: bool = False, **settings: Any
) -> AsyncIterator[Driver]:
    allowed = [int(TelegramDriver.other)] if only_other else []
    async with telegram_gateway(
        make_settings, llm, telegram_allowed_user_ids=allowed, **settings
    ) as gw:
        yield TelegramDriver(gw)


@asynccontextmanager
async def line_driver_rig(
    make_settings: MakeSettings, llm: FakeOpenAI, *, only_other: bool = False, **settings: Any
) -> AsyncIterator[Driver]:
    allowed = [LineDriver.other] if only_other else []
    async with line_rig(make_settings, llm, line_allowed_user_ids=allowed, **settings) as rig:
        yield LineDriver(rig)


RIGS: dict[str, Rig] = {"telegram": telegram_rig, "line": line_driver_rig}
DRIVERS = tuple(RIGS)


def running(
    name: str,
    make_settings: MakeSettings,
    llm: FakeOpenAI,
    *,
    only_other: bool = False,
    **settings: Any,
) -> AbstractAsyncContextManager[Driver]:
    """The gateway with the named platform only, driven through its fake (see `Rig`)."""
    return RIGS[name](make_settings, llm, only_other=only_other, **settings)
