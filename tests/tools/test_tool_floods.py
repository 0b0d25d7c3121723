"""A tool server that floods: its answer is bounded while it is read, on both transports.

Real MCP servers written with the SDK: over stdio (a child process) and over Streamable
HTTP on loopback, answering a call as an SSE stream or as one JSON body. Their `flood(mb)`
returns that many MB of text; `hang` never answers; `pid` names the serving process.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
import uvicorn

from gateway.config import Settings
from gateway.core.models import ChatRef, IncomingMessage
from gateway.core.tools import AskedCall, ToolAccess
from gateway.runtime.assembly import close_parts, open_parts
from gateway.tools.config import ServerConfig
from gateway.tools.mcp_client import McpServer
from gateway.tools.policy import CallFailed, ServerUnavailable
from tests.fakes.openai_server import FakeOpenAI
from tests.tools.support import tools_file

MB = 1024 * 1024

FLOODER = textwrap.dedent(
    """
    import asyncio, os
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("flooder")

    @server.tool()
    def flood(mb: int) -> str:
        "That many megabytes of text."
        return "x" * (mb * 1024 * 1024)

    @server.tool()
    def echo(text: str) -> str:
        "Say it back."
        return "echo: " + text

    @server.tool()
    def pid() -> str:
        "The serving process."
        return str(os.getpid())

    @server.tool()
    async def hang() -> str:
        "Never answers."
        await asyncio.Event().wait()
        return "never"

    server.run("stdio")
    """
)


async def always(tool: str, call: AskedCall) -> bool:
    return True


def _stdio(tmp_path: Path) -> ServerConfig:
    script = tmp_path / "flooder.py"
    script.write_text(FLOODER, encoding="utf-8")
    return ServerConfig(command=sys.executable, args=[str(script)], trusted=True)


@contextlib.asynccontextmanager
async def _http(json_response: bool) -> AsyncIterator[ServerConfig]:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("flooder")

    @server.tool()
    def flood(mb: int) -> str:
        """That many megabytes of text."""
        return "x" * (mb * MB)

    @server.tool()
    def echo(text: str) -> str:
        """Say it back."""
        return "echo: " + text

    @server.tool()
    async def hang() -> str:
        """Never answers."""
        await asyncio.Event().wait()
        return "never"

    app = server.streamable_http_app(json_response=json_response)
    config = uvicorn.Config(
        app, host="127.0.0.1", port=0, log_level="warning", timeout_graceful_shutdown=0
    )
    web = uvicorn.Server(config)
    task = asyncio.create_task(web.serve())
    while not web.started:
        await asyncio.sleep(0.01)
    port = web.servers[0].sockets[0].getsockname()[1]
    try:
        yield ServerConfig(url=f"http://127.0.0.1:{port}/mcp", trusted=True)
    finally:
        web.should_exit = True
        await task


@contextlib.asynccontextmanager
async def _started(config: ServerConfig, max_bytes: int) -> AsyncIterator[McpServer]:
    server = McpServer("flooder", config, secrets=(), timeout=60, max_bytes=max_bytes)
    await server.start()
    assert server.alive, server.error
    try:
        yield server
    finally:
        await server.stop()


async def test_a_stdio_flood_is_cut_at_its_bound_in_little_cpu_and_the_server_serves_again(
    tmp_path: Path,
) -> None:
    async with _started(_stdio(tmp_path), max_bytes=2 * MB) as server:
        first = await server.call("pid", {})
        cpu = time.process_time()
        with pytest.raises(ServerUnavailable, match="more than 2 MB"):
            await server.call("flood", {"mb": 40})
        # Before: the SDK's line reader joined 40 MB chunk by chunk (48 s of CPU, 400 MiB).
        assert time.process_time() - cpu < 2.0
        # Reading stopped: the flooding process is stopped, and a fresh one serves.
        await server.settled()
        assert server.alive, server.error
        assert await server.call("echo", {"text": "after"}) == ("echo: after", False)
        second = await server.call("pid", {})
    assert first[0] != second[0]
    with pytest.raises(ProcessLookupError):
        os.kill(int(first[0]), 0)


async def test_a_result_under_the_bound_is_read_whole_over_stdio(tmp_path: Path) -> None:
    # The SDK's server sends a text result twice (as content and as structured content).
    async with _started(_stdio(tmp_path), max_bytes=3 * MB) as server:
        cpu = time.process_time()
        text, failed = await server.call("flood", {"mb": 1})
        assert time.process_time() - cpu < 2.0
    assert (len(text), failed) == (MB, False)


@pytest.mark.parametrize("json_response", [True, False], ids=["json", "sse"])
async def test_an_http_flood_is_cut_at_its_bound_and_the_server_serves_again(
    json_response: bool,
) -> None:
    async with _http(json_response) as config, _started(config, max_bytes=2 * MB) as server:
        with pytest.raises((CallFailed, ServerUnavailable)) as failed:
            await server.call("flood", {"mb": 20})
        said = str(failed.value)
        assert "2 MB" in said or "2097152 byte" in said
        await server.settled()
        assert await server.call("echo", {"text": "after"}) == ("echo: after", False)
        text, _ = await server.call("flood", {"mb": 0})
    assert text == ""


@pytest.mark.parametrize("transport", ["stdio", "json", "sse"])
async def test_a_timed_out_calls_reading_is_stopped_and_the_server_serves_again(
    transport: str, tmp_path: Path
) -> None:
    async with contextlib.AsyncExitStack() as stack:
        if transport == "stdio":
            config = _stdio(tmp_path)
        else:
            config = await stack.enter_async_context(_http(transport == "json"))
        server = await stack.enter_async_context(_started(config, max_bytes=2 * MB))
        before = await server.call("pid", {}) if transport == "stdio" else None
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.5):
                await server.call("hang", {})
        assert not server.alive  # given up: out of the turns until it is started again
        await server.settled()
        assert await server.call("echo", {"text": "next"}) == ("echo: next", False)
        if before is not None:
            with pytest.raises(ProcessLookupError):
                os.kill(int(before[0]), 0)


async def test_the_model_is_told_the_result_passed_its_bound(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    config = _stdio(tmp_path)
    server = {"command": config.command, "args": config.args, "trusted": True}
    settings = make_settings(
        llm_base_url=fake_llm.base_url,
        llm_model="fake-model",
        tools_file=tools_file(tmp_path, servers={"flooder": server}),
        tool_connect_timeout_seconds=60,
        tool_result_max_mb=0.5,
    )
    fake_llm.tool_call("flooder__flood", mb=10)
    fake_llm.reply("too big")
    parts = await open_parts(settings)
    try:
        assert parts.tools is not None
        await parts.tools.start()
        chat = ChatRef(channel="console", chat_id="c", user_id="u")
        allow = ToolAccess(confirm=always)
        answer = await parts.agent.respond(IncomingMessage(chat=chat, text="flood"), access=allow)
    finally:
        await close_parts(parts)
    assert answer.text == "too big"
    told = fake_llm.requests[1]["messages"][-1]["content"]
    assert "more than 0.5 MB (SKILLGATE_TOOL_RESULT_MAX_MB): reading stopped" in told
