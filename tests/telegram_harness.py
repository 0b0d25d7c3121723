"""The gateway with its real Telegram channel, served on loopback against FakeTelegramAPI."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from aiohttp import ClientResponse, web
from aiohttp.test_utils import TestClient, TestServer

from gateway.app import PARTS, build_app
from gateway.channels.telegram.channel import TelegramChannel
from gateway.config import Settings
from gateway.runtime.assembly import Parts
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegramAPI

SECRET = "tg-webhook-secret_123"
ADMIN = {"Authorization": "Bearer admin-secret-token"}
# Pacing would only slow the tests down, and typing shows at once so tests see it with an
# instant model; the tests that check either set their own.
FAST = {"private_interval": 0.0, "group_per_minute": 0.0, "poll_timeout": 1.0, "typing_delay": 0.0}


@dataclass
class Gateway:
    """What a test drives: the fake Bot API, the HTTP client, the channel and its parts."""

    fake: FakeTelegramAPI
    llm: FakeOpenAI
    client: TestClient
    channel: TelegramChannel
    app: web.Application

    @property
    def parts(self) -> Parts:
        return self.app[PARTS]

    async def post(self, update: Any, *, secret: str | None = SECRET) -> ClientResponse:
        """POST a webhook as Telegram would (a dict is sent as JSON, bytes as they are)."""
        headers = {} if secret is None else {"X-Telegram-Bot-Api-Secret-Token": secret}
        if isinstance(update, bytes):
            headers["Content-Type"] = "application/json"
            return await self.client.post("/webhook/telegram", data=update, headers=headers)
        return await self.client.post("/webhook/telegram", json=update, headers=headers)

    async def deliver(self, update: dict[str, Any]) -> None:
        """Post an update, expect 200, and wait until it was processed."""
        resp = await self.post(update)
        assert resp.status == 200, await resp.text()
        await self.idle()

    async def idle(self, timeout: float = 10.0) -> None:
        await self.parts.worker.wait_idle(timeout)

    async def feedback(self) -> list[dict[str, Any]]:
        resp = await self.client.get("/admin/api/feedback", headers=ADMIN)
        assert resp.status == 200
        rows: list[dict[str, Any]] = await resp.json()
        return rows


@asynccontextmanager
async def telegram_gateway(
    make_settings: Callable[..., Settings],
    llm: FakeOpenAI,
    *,
    channel_options: dict[str, Any] | None = None,
    before_start: Callable[[FakeTelegramAPI], None] | None = None,
    fake: FakeTelegramAPI | None = None,
    clock: Callable[[], float] | None = None,
    **settings: Any,
) -> AsyncIterator[Gateway]:
    """Start the fake Bot API and the gateway (webhook mode unless settings say otherwise;
    on `clock`, where given).

    With `fake`, that running fake Bot API is used (and kept): a restarted gateway finds
    the messages the last one sent.
    """
    async with contextlib.AsyncExitStack() as stack:
        if fake is None:
            fake = await stack.enter_async_context(FakeTelegramAPI())
        if before_start is not None:
            before_start(fake)
        values: dict[str, Any] = {
            "telegram_bot_token": fake.token,
            "telegram_webhook_secret": SECRET,
            "telegram_api_base_url": fake.base_url,
            "llm_base_url": llm.base_url,
            "llm_model": "fake-model",
            "admin_token": "admin-secret-token",
        }
        channel = TelegramChannel(
            make_settings(**{**values, **settings}), **{**FAST, **(channel_options or {})}
        )
        if clock is None:
            app = build_app(channel.settings, channels=[channel])
        else:
            app = build_app(channel.settings, channels=[channel], clock=clock)
        async with TestClient(TestServer(app)) as client:
            app[PARTS].worker.backoff = lambda attempt: 0.01
            yield Gateway(fake, llm, client, channel, app)


def answer_markup(fake: FakeTelegramAPI, index: int = -1) -> dict[str, Any] | None:
    """The reply_markup of a successful sendMessage (the last one by default)."""
    sent = [c for c in fake.calls_of("sendMessage") if c.status == 200]
    markup: dict[str, Any] | None = sent[index].params.get("reply_markup")
    return markup
