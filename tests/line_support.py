"""The real app with its LINE channel; the SDK talks to FakeLineAPI, the model is FakeOpenAI."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from aiohttp import ClientResponse
from aiohttp.test_utils import TestClient, TestServer

from gateway.app import CHANNELS, PARTS, build_app
from gateway.channels.line.channel import LineChannel
from gateway.config import Settings
from gateway.conversation.dispatch import Conversation
from gateway.store import Store
from tests.fakes.line_api import USER_ID, FakeLineAPI, sign, webhook_body
from tests.fakes.openai_server import FakeOpenAI

SECRET = "test-line-channel-secret"
ADMIN = {"Authorization": "Bearer admin-secret-token"}
REPLY = "/v2/bot/message/reply"
PUSH = "/v2/bot/message/push"
LOADING = "/v2/bot/chat/loading/start"
GROUP_ID = "C" + "3" * 32


@dataclass
class LineRig:
    """One running gateway and the fakes around it."""

    http: TestClient
    fake: FakeLineAPI
    llm: FakeOpenAI

    @property
    def channel(self) -> LineChannel:
        channel = self.http.app[CHANNELS][0]
        assert isinstance(channel, LineChannel)
        return channel

    @property
    def conversation(self) -> Conversation:
        """The LINE channel's conversation layer (running)."""
        session = self.channel.session
        assert session is not None
        return session.conversation

    @property
    def store(self) -> Store:
        return self.http.app[PARTS].store

    def token(self, to: str = USER_ID) -> str:
        """A reply token the fake accepts once, for chat `to`."""
        return self.fake.issue_reply_token(to=to)

    async def post(
        self, *events: dict[str, Any], body: bytes | None = None, signature: str | None = None
    ) -> ClientResponse:
        """POST a webhook, signed with the channel secret unless `signature` is given."""
        raw = webhook_body(*events) if body is None else body
        sig = sign(SECRET, raw) if signature is None else signature
        headers = {"Content-Type": "application/json"}
        if sig:
            headers["X-Line-Signature"] = sig
        return await self.http.post("/webhook/line", data=raw, headers=headers)

    async def deliver(self, *events: dict[str, Any]) -> None:
        """POST signed events, expect 200, and wait until the gateway has handled them."""
        resp = await self.post(*events)
        assert resp.status == 200, await resp.text()
        await self.idle()

    async def idle(self) -> None:
        await self.http.app[PARTS].worker.wait_idle(10)

    async def inbox_errors(self) -> list[str]:
        """Errors recorded on stored updates (a handler that raised at least once)."""
        rows = await self.store.run(
            lambda db: list(db.query("select last_error from inbox where last_error is not null"))
        )
        return [str(r["last_error"]) for r in rows]

    async def feedback(self) -> list[dict[str, Any]]:
        resp = await self.http.get("/admin/api/feedback", headers=ADMIN)
        assert resp.status == 200
        rows: list[dict[str, Any]] = await resp.json()
        return rows

    def last_prompt(self) -> str:
        """The user text of the last model request."""
        return str(self.llm.requests[-1]["messages"][-1]["content"])


def quick_reply_data(message: dict[str, Any]) -> list[str]:
    """The postback data of a sent message's quick reply buttons."""
    items = message.get("quickReply", {}).get("items", [])
    return [item["action"]["data"] for item in items]


def dumps(value: Any) -> bytes:
    return json.dumps(value).encode()


def line_settings(
    make_settings: Callable[..., Settings], llm: FakeOpenAI, fake: FakeLineAPI, **overrides: Any
) -> Settings:
    """Settings of a gateway with LINE against `fake` and the model `llm`."""
    return make_settings(
        llm_base_url=llm.base_url,
        llm_model="fake-model",
        line_channel_secret=SECRET,
        line_channel_access_token=fake.access_token,
        line_api_base_url=fake.base_url,
        line_data_api_base_url=fake.data_url,
        **overrides,
    )


@asynccontextmanager
async def line_rig(
    make_settings: Callable[..., Settings],
    llm: FakeOpenAI,
    *,
    clock: Callable[[], float] | None = None,
    **overrides: Any,
) -> AsyncIterator[LineRig]:
    """Start FakeLineAPI and the gateway (on `clock`, where given); stop the gateway before
    the fake."""
    async with FakeLineAPI() as fake:
        settings = line_settings(
            make_settings, llm, fake, admin_token="admin-secret-token", **overrides
        )
        app = build_app(settings) if clock is None else build_app(settings, clock=clock)
        async with TestClient(TestServer(app)) as http:
            rig = LineRig(http, fake, llm)
            await rig.channel.ready()  # line-bot-sdk loads in the background
            rig.channel.client.backoff = lambda attempt: 0.01
            http.app[PARTS].worker.backoff = lambda attempt: 0.01
            yield rig
