"""The built-in web tools: search through a fake SearXNG and a fake Brave API; fetch never
reaches private addresses, named or literal, on the first request or after any redirect."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.abc import AbstractResolver, ResolveResult

from gateway.config import Settings
from gateway.core.models import ChatRef, IncomingMessage
from gateway.core.tools import ToolAccess
from gateway.runtime.assembly import close_parts, open_parts
from gateway.tools.web import PublicResolver, Refused, WebTools, checked_url, public
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
    make_settings: Callable[..., Settings],
    fake_llm: FakeOpenAI,
    tmp_path: Path,
    resolver: AbstractResolver | None = None,
    **extra: Any,
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
        if resolver is not None:
            [web_tools] = [m.backend for m in parts.tools.mounted]
            assert isinstance(web_tools, WebTools)
            web_tools.resolver = resolver
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


# Every spelling of loopback the third hostile review tried (the last three reached the
# page before: the HTTP client maps them to 127.0.0.1, a literal it never resolves), and a
# few more the same mapping gives.
LOOPBACK = [
    "127.0.0.1",
    "localhost",
    "[::1]",
    "127.1",
    "127.0.1",
    "2130706433",
    "0x7f000001",
    "0177.0.0.1",
    "0x7f.0.0.1",
    "127.000.000.001",
    "127.0.0.1.",
    "LocalHost.",
    "[::ffff:127.0.0.1]",
    "[::ffff:7f00:1]",
    "[0:0:0:0:0:0:0:1]",
    "127\u30020\u30020\u30021",  # ideographic full stops
    "\uff11\uff12\uff17.\uff10.\uff10.\uff11",  # full-width digits
    "\u2460\u2461\u2466.0.0.1",  # circled digits
    "127\uff0e0\uff0e0\uff0e1",  # full-width full stops
    "127\uff610\uff610\uff611",  # half-width ideographic full stops
    "0.0.0.0",
    "0",
    "[::]",
    "app.localhost",
]
# The same spellings of the cloud metadata address (link-local), and its IPv6 twins.
METADATA = [
    "169.254.169.254",
    "169\u3002254\u3002169\u3002254",
    "\uff11\uff16\uff19.\uff12\uff15\uff14.\uff11\uff16\uff19.\uff12\uff15\uff14",
    "\u2460\u2465\u2468.\u2461\u2464\u2463.\u2460\u2465\u2468.\u2461\u2464\u2463",
    "\u246f9.254.169.254",  # circled sixteen
    "2852039166",
    "0xa9fea9fe",
    "0251.0376.0251.0376",
    "0xa9.0xfe.0xa9.0xfe",
    "169.254.43518",
    "169.16689662",
    "169.254.169.254.",
    "[::ffff:169.254.169.254]",
    "[::ffff:a9fe:a9fe]",
    "[::169.254.169.254]",
    "[64:ff9b::a9fe:a9fe]",
    "[2002:a9fe:a9fe::1]",  # 6to4
    "[fd00:ec2::254]",  # the IPv6 metadata service
]


@pytest.mark.parametrize("host", LOOPBACK + METADATA)
def test_every_spelling_of_a_private_address_is_refused_as_the_client_reads_it(host: str) -> None:
    with pytest.raises(Refused):
        checked_url(f"http://{host}:8080/latest/meta-data/")


@pytest.mark.parametrize("host", ["example.org", "93.184.215.14", "[2606:4700::1111]"])
def test_a_public_name_or_address_passes_the_check_as_the_client_reads_it(host: str) -> None:
    assert checked_url(f"http://{host}/page").raw_host == host.strip("[]")


@pytest.mark.parametrize("host", LOOPBACK)
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


BRAVE_KEY = "brave-key-5f1c9e"


class FakeBrave:
    """Brave's web search JSON API on loopback: records each request's query and key."""

    def __init__(self) -> None:
        self.requests: list[tuple[dict[str, str], str | None]] = []
        self.url = ""

    async def _search(self, request: web.Request) -> web.Response:
        self.requests.append((dict(request.query), request.headers.get("X-Subscription-Token")))
        if request.headers.get("X-Subscription-Token") != BRAVE_KEY:
            return web.json_response({"type": "ErrorResponse"}, status=401)
        results = [
            {"title": f"Brave {i}", "url": f"https://example.com/{i}", "description": f"d{i}"}
            for i in range(10)
        ]
        return web.json_response({"type": "search", "web": {"type": "search", "results": results}})

    async def __aenter__(self) -> FakeBrave:
        app = web.Application()
        app.router.add_get("/res/v1/web/search", self._search)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}/res/v1/web/search"
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._runner.cleanup()


async def test_web_search_asks_brave_with_the_key_in_its_header_and_never_logs_it(
    make_settings: Callable[..., Settings],
    fake_llm: FakeOpenAI,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake_llm.tool_call("web_search", query="skillgate")
    fake_llm.reply("Found it.")
    caplog.set_level(logging.DEBUG)
    async with FakeBrave() as brave:
        trace = await turn(
            make_settings,
            fake_llm,
            tmp_path,
            brave_api_key=BRAVE_KEY,
            brave_search_url=brave.url,
        )
    assert brave.requests == [({"q": "skillgate", "count": "5"}, BRAVE_KEY)]
    told = fake_llm.requests[1]["messages"][-1]["content"]
    shown = json.loads(told.split("\n", 2)[2].rsplit("\n", 1)[0])
    assert [(r["title"], r["snippet"]) for r in shown] == [
        (f"Brave {i}", f"d{i}") for i in range(5)
    ]
    [call] = trace.tool_calls
    assert call.status == "ok"
    assert BRAVE_KEY not in caplog.text
    assert BRAVE_KEY not in json.dumps(fake_llm.requests) + trace.model_dump_json()


# The one address the test resolver counts as public: the page server's loopback alias.
PAGES = "127.0.0.2"


class Names(AbstractResolver):
    """Test names to fixed addresses; every other name as the system resolves it."""

    def __init__(self, names: dict[str, str]) -> None:
        self.names = names
        self.system = PublicResolver(allowed=lambda _: True)

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        if host not in self.names:
            return await self.system.resolve(host, port, family)
        address = self.names[host]
        kind = socket.AF_INET6 if ":" in address else socket.AF_INET
        return [
            ResolveResult(hostname=host, host=address, port=port, family=kind, proto=0, flags=0)
        ]

    async def close(self) -> None:
        await self.system.close()


class FakePages:
    """Pages on 127.0.0.2 (named pages.test) and an admin page on 127.0.0.1; every path
    requested is recorded."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self.port = 0
        self.admin_port = 0
        self.target = ""

    async def _page(self, request: web.Request) -> web.Response:
        self.paths.append(request.path)
        if request.path == "/start":
            raise web.HTTPFound("/hop")
        if request.path == "/hop":  # the target's bytes as they are (UTF-8), not normalised
            return web.Response(status=302, headers={"Location": self.target})
        if request.path == "/admin":
            return web.Response(text="<html><title>secret admin page</title></html>")
        return web.Response(
            text="<html><title>Notes</title><script>x()</script><p>Plain words.</p></html>",
            content_type="text/html",
        )

    async def __aenter__(self) -> FakePages:
        app = web.Application()
        app.router.add_get("/{path:.*}", self._page)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        sites = [web.TCPSite(self._runner, address, 0) for address in (PAGES, "127.0.0.1")]
        for site in sites:
            await site.start()
        self.port, self.admin_port = (
            s._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            for s in sites
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._runner.cleanup()


def pages_resolver() -> PublicResolver:
    """The real policy, with pages.test (the page server) counted as public."""
    names = Names({"pages.test": PAGES, "metadata.test": "169.254.169.254", "lan.test": "10.0.0.7"})
    return PublicResolver(names, allowed=lambda address: address == PAGES or public(address))


async def test_web_fetch_reads_a_public_page_as_text(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    async with FakePages() as pages:
        fake_llm.tool_call("web_fetch", url=f"http://pages.test:{pages.port}/notes")
        fake_llm.reply("Read it.")
        trace = await turn(make_settings, fake_llm, tmp_path, resolver=pages_resolver())
    assert pages.paths == ["/notes"]
    told = fake_llm.requests[1]["messages"][-1]["content"]
    assert "Notes\n\nPlain words." in told and "x()" not in told
    assert [c.status for c in trace.tool_calls] == ["ok"]


@pytest.mark.parametrize(
    "target",
    [
        "http://127.0.0.1:{admin}/admin",  # a literal loopback address
        "http://localhost:{admin}/admin",  # a name resolving to loopback
        "http://[::ffff:127.0.0.1]:{admin}/admin",  # loopback inside an IPv6 address
        "http://metadata.test:{admin}/admin",  # a name resolving to link-local (metadata)
        "http://lan.test:{admin}/admin",  # a name resolving to a private address
        "http://127\u30020\u30020\u30021:{admin}/admin",  # ideographic full stops
        "http://\uff11\uff12\uff17.\uff10.\uff10.\uff11:{admin}/admin",  # full-width
        "http://\u2460\u2461\u2466.0.0.1:{admin}/admin",  # circled digits
        "http://2130706433:{admin}/admin",  # one decimal number
    ],
)
async def test_web_fetch_refuses_a_redirect_to_a_private_address_on_any_hop(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, tmp_path: Path, target: str
) -> None:
    async with FakePages() as pages:
        pages.target = target.format(admin=pages.admin_port)
        fake_llm.tool_call("web_fetch", url=f"http://pages.test:{pages.port}/start")
        fake_llm.reply("I cannot read that page.")
        trace = await turn(make_settings, fake_llm, tmp_path, resolver=pages_resolver())
    # The first hop and the second were followed; the third, private, never requested.
    assert pages.paths == ["/start", "/hop"]
    [call] = trace.tool_calls
    assert call.status == "refused"
    assert "non-public" in (call.detail or "") or "not a public" in (call.detail or "")
    assert "secret admin page" not in fake_llm.requests[1]["messages"][-1]["content"]


async def test_a_connection_to_a_private_peer_is_refused_even_when_the_resolver_lets_it_pass(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    # A resolver that checks nothing: the socket itself still refuses a loopback peer.
    async with FakePages() as pages:
        fake_llm.tool_call("web_fetch", url=f"http://sneaky.test:{pages.admin_port}/admin")
        fake_llm.reply("I cannot read that page.")
        resolver = Names({"sneaky.test": "127.0.0.1"})
        trace = await turn(make_settings, fake_llm, tmp_path, resolver=resolver)
    assert pages.paths == []
    [call] = trace.tool_calls
    assert call.status == "refused"
    assert "127.0.0.1 is not a public address" in (call.detail or "")


class SlowPage:
    """One page sent in three chunks, apart in time so that each arrives on its own."""

    def __init__(self) -> None:
        self.url = ""

    async def _page(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await response.prepare(request)
        for part in (b"first part, ", b"second part, ", b"third part."):
            await response.write(part)
            await asyncio.sleep(0.05)  # each its own chunk on the wire
        await response.write_eof()
        return response

    async def __aenter__(self) -> SlowPage:
        app = web.Application()
        app.router.add_get("/", self._page)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, PAGES, 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://pages.test:{port}/"
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._runner.cleanup()


async def test_web_fetch_reads_every_chunk_of_a_page_not_only_the_first(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    async with SlowPage() as page:
        fake_llm.tool_call("web_fetch", url=page.url)
        fake_llm.reply("Read it.")
        trace = await turn(make_settings, fake_llm, tmp_path, resolver=pages_resolver())
    told = fake_llm.requests[1]["messages"][-1]["content"]
    assert "first part, second part, third part." in told
    assert [c.status for c in trace.tool_calls] == ["ok"]
