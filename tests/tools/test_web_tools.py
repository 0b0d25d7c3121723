"""The built-in web tools: search through a fake SearXNG; fetch never reaches private addresses."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from gateway.app import close_parts, open_parts
from gateway.config import Settings
from gateway.core.models import ChatRef, IncomingMessage
from gateway.core.tools import ToolAccess
from gateway.tools.web import public
from tests.fakes.openai_server import FakeOpenAI
from tests.tools.support import last_trace, tool_names, tools_file

CHAT = ChatRef(channel="console", chat_id="c1", user_id="u1")
HITS = [
    {"title": f"Result {i}", "url": f"https://example.org/{i}", "content": f"snippet {i}"}
    for i in range(8)
]


class FakeSearx:
    """SearXNG's /search?format=json, and a page that must never be fetched, on loopback."""

    def __init__(self) -> None:
        self.searches: list[dict[str, str]] = []
        self.pages = 0
        self.url = ""

    async def _search(self, request: web.Request) -> web.Response:
        self.searches.append(dict(request.query))
        return web.json_response({"query": request.query["q"], "results": HITS})

    async def _page(self, request: web.Request) -> web.Response:
        self.pages += 1
        return web.Response(text="<html><title>secret admin page</title></html>")

    async def __aenter__(self) -> FakeSearx:
        app = web.Application()
        app.router.add_get("/search", self._search)
        app.router.add_get("/admin", self._page)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._runner.cleanup()


@pytest.fixture
async def searx() -> AsyncIterator[FakeSearx]:
    async with FakeSearx() as fake:
        yield fake


async def turn(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, tmp_path: Path, **extra: Any
) -> Any:
    settings = make_settings(
        llm_base_url=fake_llm.base_url,
        llm_model="fake-model",
        tools_file=tools_file(
            tmp_path, web={"search": {"policy": "auto"}, "fetch": {"policy": "auto"}}
        ),
        **extra,
    )
    parts = await open_parts(settings)
    try:
        assert parts.tools is not None
        await parts.tools.start()
        await parts.agent.respond(
            IncomingMessage(chat=CHAT, text="look it up"), access=ToolAccess()
        )
        return await last_trace(parts.store)
    finally:
        await close_parts(parts)


async def test_web_search_asks_searxng_and_gives_the_model_five_results(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, tmp_path: Path, searx: FakeSearx
) -> None:
    fake_llm.tool_call("web_search", query="skillgate mcp")
    fake_llm.reply("Found it.")
    trace = await turn(make_settings, fake_llm, tmp_path, searxng_url=searx.url)
    assert {"web_search", "web_fetch"} <= set(tool_names(fake_llm.requests[0]))
    assert searx.searches == [{"q": "skillgate mcp", "format": "json"}]
    told = fake_llm.requests[1]["messages"][-1]["content"]
    shown = json.loads(told.split("\n", 2)[2].rsplit("\n", 1)[0])
    assert [r["title"] for r in shown] == [f"Result {i}" for i in range(5)]
    assert [c.status for c in trace.tool_calls] == ["ok"]


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "[::1]"])
async def test_web_fetch_of_a_loopback_address_is_refused_before_any_request(
    make_settings: Callable[..., Settings],
    fake_llm: FakeOpenAI,
    tmp_path: Path,
    searx: FakeSearx,
    host: str,
) -> None:
    port = searx.url.rsplit(":", 1)[1]
    fake_llm.tool_call("web_fetch", url=f"http://{host}:{port}/admin")
    fake_llm.reply("I cannot read that page.")
    trace = await turn(make_settings, fake_llm, tmp_path, searxng_url=searx.url)
    assert searx.pages == 0
    [call] = trace.tool_calls
    assert call.status == "refused"
    assert "secret admin page" not in fake_llm.requests[1]["messages"][-1]["content"]


@pytest.mark.parametrize(
    ("address", "allowed"),
    [
        ("93.184.215.14", True),
        ("2606:4700::1111", True),
        ("10.1.2.3", False),
        ("192.168.1.1", False),
        ("169.254.169.254", False),  # cloud metadata: link-local
        ("fe80::1", False),
        ("::ffff:127.0.0.1", False),
        ("100.64.0.1", False),  # carrier-grade NAT
        ("0.0.0.0", False),
    ],
)
def test_only_public_addresses_are_fetched(address: str, allowed: bool) -> None:
    assert public(address) is allowed
