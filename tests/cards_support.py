"""A gateway with Telegram and LINE both configured, two Telegram admins and one LINE admin."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from aiohttp import ClientResponse
from aiohttp.test_utils import TestClient, TestServer

from gateway.app import PARTS, build_app
from gateway.channels.line.channel import LineChannel
from gateway.channels.telegram.channel import TelegramChannel
from gateway.config import Settings
from gateway.runtime.assembly import Parts
from tests.fakes.line_api import USER_ID, FakeLineAPI, postback_event, sign, webhook_body
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegramAPI, make_callback_update
from tests.synthesis_support import AUTH, answer, proposal, seed_session
from tests.telegram_harness import FAST
from tests.telegram_harness import SECRET as TG_SECRET

LINE_SECRET = "test-line-channel-secret"
ALICE, BOB = 1001, 1002
"""The Telegram admins (their private chat ids equal their user ids)."""
MALLORY = 1003
"""A Telegram user who may chat with the bot but is no admin."""
LINE_ADMIN = USER_ID
LINE_OTHER = "U" + "2" * 32
PUSH = "/v2/bot/message/push"
REPLY = "/v2/bot/message/reply"
_updates = iter(range(10_000, 10_000_000))


@dataclass
class Rig:
    """The running gateway, its admin API client and the three fakes."""

    client: TestClient
    telegram: FakeTelegramAPI
    line: FakeLineAPI
    llm: FakeOpenAI

    @property
    def parts(self) -> Parts:
        return self.client.server.app[PARTS]

    async def idle(self) -> None:
        """Wait until stored updates are handled and card work is done."""
        await self.parts.worker.wait_idle(10)
        if self.parts.admins.cards is not None:
            await self.parts.admins.cards.wait_idle(10)

    async def api(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        resp = await self.client.request(method, f"/admin/api{path}", json=body, headers=AUTH)
        text = await resp.text()
        return resp.status, json.loads(text) if text else None

    async def propose(self, name: str = "chat-brevity", **fields: Any) -> int:
        """Seed a rated session, run a synthesis pass that proposes one skill; its id."""
        session = await seed_session(self.parts.store, chat="seed-chat")
        self.llm.reply(answer(proposal(name, based_on=[session], **fields)))
        status, run = await self.api("POST", "/synthesize")
        assert status == 200 and run["status"] == "ok", run
        await self.idle()
        assert len(run["proposed"]) == 1, run
        (made,) = run["proposed"]
        return int(made["id"])

    # ---- Telegram ----------------------------------------------------------------------

    def cards_in(self, chat_id: int) -> list[dict[str, Any]]:
        """Messages in a Telegram chat that are proposal cards (their text names a proposal)."""
        return [
            m
            for (chat, _), m in sorted(self.telegram.messages.items())
            if chat == chat_id and str(m.get("text", "")).startswith("<b>Proposal #")
        ]

    async def press(
        self, message: dict[str, Any], label: str, *, user_id: int, data: str | None = None
    ) -> ClientResponse:
        """Press the button whose label contains `label` (or send `data` instead), as a user."""
        buttons = [b for row in message["reply_markup"]["inline_keyboard"] for b in row]
        found = next(b for b in buttons if label in b["text"])
        update = make_callback_update(
            next(_updates),
            data if data is not None else found["callback_data"],
            chat_id=message["chat"]["id"],
            user_id=user_id,
            message_id=message["message_id"],
            message_text=message["text"],
            reply_markup=message["reply_markup"],
            first_name="Alice" if user_id == ALICE else f"User{user_id}",
            username="alice" if user_id == ALICE else None,
        )
        resp = await self.post_telegram(update)
        await self.idle()
        return resp

    async def post_telegram(self, update: dict[str, Any]) -> ClientResponse:
        headers = {"X-Telegram-Bot-Api-Secret-Token": TG_SECRET}
        resp = await self.client.post("/webhook/telegram", json=update, headers=headers)
        assert resp.status == 200, await resp.text()
        return resp

    def acks(self) -> list[str]:
        """Texts of answerCallbackQuery calls, in order."""
        return [
            str(c.params.get("text", "")) for c in self.telegram.calls_of("answerCallbackQuery")
        ]

    # ---- LINE --------------------------------------------------------------------------

    def line_cards(self, to: str = LINE_ADMIN) -> list[dict[str, Any]]:
        """Flex messages delivered to a LINE chat."""
        return [m for m in self.line.delivered_messages(to) if m.get("type") == "flex"]

    async def postback(self, data: str, *, user_id: str = LINE_ADMIN) -> None:
        """A signed webhook carrying one postback, handled to the end."""
        event = postback_event(
            data, user_id=user_id, reply_token=self.line.issue_reply_token(to=user_id)
        )
        await self.post_line(event)

    async def post_line(self, *events: dict[str, Any]) -> None:
        body = webhook_body(*events)
        headers = {"X-Line-Signature": sign(LINE_SECRET, body), "Content-Type": "application/json"}
        resp = await self.client.post("/webhook/line", data=body, headers=headers)
        assert resp.status == 200, await resp.text()
        await self.idle()


def postbacks(message: dict[str, Any]) -> dict[str, str]:
    """Label -> data of every postback action in a Flex message."""
    found: dict[str, str] = {}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            action = node.get("action")
            if isinstance(action, dict) and action.get("type") == "postback":
                found[action["label"]] = action["data"]
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(message)
    return found


def flex_texts(message: dict[str, Any]) -> str:
    """All visible text of a Flex message, joined by newlines."""
    texts: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") in ("text", "span") and isinstance(node.get("text"), str):
                texts.append(node["text"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(message.get("contents"))
    return "\n".join(texts)


def rig_settings(
    make_settings: Callable[..., Settings],
    llm: FakeOpenAI,
    telegram: FakeTelegramAPI,
    line: FakeLineAPI,
    **overrides: Any,
) -> Settings:
    values: dict[str, Any] = {
        "llm_base_url": llm.base_url,
        "llm_model": "fake-model",
        "llm_max_retries": 0,
        "admin_token": "admin-secret-token",
        "session_idle_minutes": 0,
        "synthesis_interval_minutes": 0,
        "telegram_bot_token": telegram.token,
        "telegram_webhook_secret": TG_SECRET,
        "telegram_api_base_url": telegram.base_url,
        "telegram_admin_ids": [ALICE, BOB],
        "line_channel_secret": LINE_SECRET,
        "line_channel_access_token": line.access_token,
        "line_api_base_url": line.base_url,
        "line_admin_ids": [LINE_ADMIN],
    }
    values.update(overrides)
    return make_settings(**values)


@asynccontextmanager
async def running(
    settings: Settings, telegram: FakeTelegramAPI, line: FakeLineAPI, llm: FakeOpenAI
) -> AsyncIterator[Rig]:
    """The gateway on these settings, with unpaced Telegram sends and fast retries."""
    channels = [TelegramChannel(settings, **FAST), LineChannel(settings)]
    app = build_app(settings, channels=channels)
    async with TestClient(TestServer(app)) as client:
        parts = app[PARTS]
        parts.worker.backoff = lambda attempt: 0.01
        line_channel = channels[1]
        assert isinstance(line_channel, LineChannel)
        line_channel.client.backoff = lambda attempt: 0.01
        rig = Rig(client, telegram, line, llm)
        await rig.idle()
        yield rig


@asynccontextmanager
async def fakes() -> AsyncIterator[tuple[FakeTelegramAPI, FakeLineAPI]]:
    async with FakeTelegramAPI() as telegram, FakeLineAPI() as line:
        yield telegram, line
