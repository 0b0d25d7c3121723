"""line-bot-sdk loads in the background: healthy at once, and nothing sent meanwhile is lost."""

from __future__ import annotations

import asyncio
import importlib
import subprocess
import sys
import threading
from collections.abc import Callable
from types import ModuleType

import pytest
from aiohttp.test_utils import TestClient, TestServer

from gateway.app import CHANNELS, build_app
from gateway.channels.line import channel as line_channel
from gateway.channels.line.channel import LineChannel
from gateway.config import Settings
from tests.fakes.line_api import FakeLineAPI, sign, text_event, webhook_body
from tests.fakes.openai_server import FakeOpenAI
from tests.line_support import SECRET, line_settings


def test_importing_the_line_channel_does_not_import_the_sdk() -> None:
    code = (
        "import sys, gateway.channels.line.entry as e;"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'linebot'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


async def test_a_webhook_sent_while_the_sdk_loads_is_answered_once_it_has(
    make_settings: Callable[..., Settings],
    fake_llm: FakeOpenAI,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake_llm.default = lambda body: f"re: {body['messages'][-1]['content']}"
    loaded = threading.Event()

    class SlowImports:
        """The SDK's import, held until the test lets it finish."""

        @staticmethod
        def import_module(name: str) -> ModuleType:
            loaded.wait(10)
            return importlib.import_module(name)

    monkeypatch.setattr(line_channel, "importlib", SlowImports)
    async with FakeLineAPI() as fake:
        settings = line_settings(make_settings, fake_llm, fake)
        async with TestClient(TestServer(build_app(settings))) as http:
            channel = http.app[CHANNELS][0]
            assert isinstance(channel, LineChannel) and channel.session is None
            health = await http.get("/healthz")  # healthy while the SDK is still loading
            assert health.status == 200
            body = webhook_body(text_event("hello early", reply_token=fake.issue_reply_token()))
            headers = {"Content-Type": "application/json", "X-Line-Signature": sign(SECRET, body)}
            posted = asyncio.ensure_future(http.post("/webhook/line", data=body, headers=headers))
            await asyncio.sleep(0.05)
            assert not posted.done()  # it waits for the signature check, not refused
            loaded.set()
            assert (await posted).status == 200
            async with asyncio.timeout(10):
                while not fake.delivered_texts():
                    await asyncio.sleep(0.02)
            assert fake.delivered_texts() == ["re: hello early"]
