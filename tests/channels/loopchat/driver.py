"""Loopchat's rig for the contract suite: the real app, its channel found through the registry."""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from aiohttp import ClientResponse
from aiohttp.test_utils import TestClient, TestServer

from gateway.app import PARTS, build_app
from gateway.runtime.assembly import Parts
from tests.channels.drivers import Driver, MakeSettings
from tests.channels.loopchat.channel import LOOPCHAT, SECRET_HEADER
from tests.channels.loopchat.fake import TOKEN, FakeLoopchat
from tests.fakes.openai_server import FakeOpenAI

ADMIN = {"Authorization": "Bearer admin-secret-token"}
GROUP = "g1"
_ids = itertools.count(1)


@contextmanager
def environment(**values: str) -> Iterator[None]:
    """The variables set for the block, as an operator's environment would hold them."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


class LoopDriver:
    name = "loopchat"
    dialect = LOOPCHAT
    user, other = "u1001", "u1002"

    def __init__(self, client: TestClient, fake: FakeLoopchat) -> None:
        self._client, self.fake = client, fake
        self._last: dict[str, Any] | None = None

    @property
    def client(self) -> TestClient:
        return self._client

    @property
    def parts(self) -> Parts:
        return self._client.app[PARTS]

    async def post(self, update: dict[str, Any], secret: str = TOKEN) -> ClientResponse:
        return await self._client.post(
            "/webhook/loopchat",
            data=json.dumps(update),
            headers={SECRET_HEADER: secret, "Content-Type": "application/json"},
        )

    async def _deliver(self, update: dict[str, Any]) -> None:
        self._last = update
        resp = await self.post(update)
        assert resp.status == 200, await resp.text()
        await self.parts.worker.wait_idle(10)

    async def say(
        self, text: str, *, user: str | None = None, group: bool = False, addressed: bool = True
    ) -> None:
        uid = user or self.user
        chat = GROUP if group else uid
        update = {"id": f"e{next(_ids)}", "chat": chat, "user": uid, "text": text}
        await self._deliver({**update, "group": group, "mention": group and addressed})

    async def answer_question(self, text: str, *, user: str | None = None) -> None:
        await self.say(text, user=user)

    async def press(self, data: str, *, user: str | None = None) -> None:
        uid = user or self.user
        update = {"id": f"e{next(_ids)}", "chat": uid, "user": uid, "press": data}
        under = [m["id"] for m in self.fake.messages(uid) if data in _data(m)]
        await self._deliver({**update, "message": under[-1]} if under else update)

    async def redeliver_last(self) -> ClientResponse:
        assert self._last is not None
        resp = await self.post(self._last)
        await self.parts.worker.wait_idle(10)
        return resp

    async def forged(self) -> ClientResponse:
        return await self.post({"id": "forged", "chat": self.user, "text": "hi"}, secret="nope")

    def texts(self, user: str | None = None) -> list[str]:
        return [m["text"] for m in self.fake.messages(user or self.user)]

    def rating_data(self, user: str | None = None) -> list[str]:
        answers = [m for m in self.fake.messages(user or self.user) if m["buttons"]]
        assert answers, "no answer with buttons"
        return [b["data"] for b in answers[-1]["buttons"]]


def _data(message: dict[str, Any]) -> list[str]:
    return [b["data"] for b in message["buttons"]]


@asynccontextmanager
async def loopchat_rig(
    make_settings: MakeSettings, llm: FakeOpenAI, *, only_other: bool = False, **settings: Any
) -> AsyncIterator[Driver]:
    """The gateway with Loopchat alone (it must be installed: the `installed` fixture)."""
    async with FakeLoopchat() as fake:
        env = {"LOOPCHAT_API_URL": fake.url, "LOOPCHAT_SECRET": TOKEN}
        if only_other:
            env["LOOPCHAT_ALLOWED_USER_IDS"] = LoopDriver.other
        with environment(**env):
            gateway = make_settings(
                llm_base_url=llm.base_url,
                llm_model="fake-model",
                admin_token="admin-secret-token",
                **settings,
            )
            async with TestClient(TestServer(build_app(gateway))) as client:
                client.app[PARTS].worker.backoff = lambda attempt: 0.01
                yield LoopDriver(client, fake)
