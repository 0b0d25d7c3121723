"""MCP servers through the official SDK: the one module that imports `mcp` (about 2 s).

Each server runs in a task of its own that holds its transport and `ClientSession` open
(the SDK's contexts must be left by the task that entered them), lists its tools, lists
them again when the server says they changed, and closes them when stopped. A stdio server
gets the SDK's minimal environment plus the variables its entry names; what it writes to
stderr is logged line by line with secrets masked. A server that fails to start, or dies,
has its tools left out and its reason kept in `error`, logged once; `probe` (every minute,
from the alert watcher) pings a live server and starts a dead one again.

What a server sends is bounded while it is read (`max_bytes`, SKILLGATE_TOOL_RESULT_MAX_MB,
per message): over stdio, beneath the SDK's line reader, its stdout is handed on one whole
line at a time by anyio's bounded `receive_until`, so a line past the bound is never held
(and the SDK's reader, which joins the chunks of a line, only ever sees whole lines); over
HTTP a JSON answer's body is cut at the bound by the client's transport and an SSE event by
the SDK's own `max_sse_event_size`. A line past the bound, or a call given up (timed out
or cancelled), ends the connection: reading stops at once, the process is stopped, and the
server is started again in the background.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextvars import ContextVar
from signal import Signals
from typing import IO, Any

import anyio
import anyio.abc
import httpx2
import mcp.client.stdio as sdk_stdio
import mcp.types as types
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from gateway.core.llm_wire import one_line
from gateway.core.tasks import cancel_and_wait
from gateway.logs import mask
from gateway.tools.config import ServerConfig
from gateway.tools.policy import CallFailed, RemoteTool, ServerUnavailable

log = logging.getLogger(__name__)


class McpServer:
    """One configured server: started, listed, called, stopped."""

    def __init__(
        self,
        name: str,
        config: ServerConfig,
        *,
        secrets: tuple[str, ...],
        timeout: float,
        max_bytes: int = 2 * 1024 * 1024,
    ) -> None:
        self.name = name
        self.config = config
        self.secrets = secrets
        self.transport = config.transport
        self.timeout = timeout
        """Seconds to connect and list the tools (and to list them again)."""
        self.max_bytes = max_bytes
        """The most bytes read of one message from the server (one stdio line, one JSON
        body, one SSE event)."""
        self.tools: list[RemoteTool] = []
        self.error: str | None = None
        self._session: ClientSession | None = None
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._wake = asyncio.Event()
        self._stopping = False
        self._stdout: BoundedLines | None = None
        self._restart: asyncio.Task[None] | None = None

    @property
    def alive(self) -> bool:
        return self._session is not None

    async def start(self) -> None:
        """Connect and list the tools within the timeout; a failure is kept in `error`."""
        if self._task is not None:
            await self.stop()  # what is left of an earlier run that ended
        self._ready, self._wake, self._stopping = asyncio.Event(), asyncio.Event(), False
        self._task = asyncio.create_task(self._run(), name=f"mcp-{self.name}")
        try:
            async with asyncio.timeout(self.timeout):
                await self._ready.wait()
        except TimeoutError:
            self._down(f"did not start and list its tools within {self.timeout:g} s")
            await self.stop()

    async def stop(self) -> None:
        restart, self._restart = self._restart, None
        if restart is not None and restart is not asyncio.current_task():
            await cancel_and_wait(restart, quiet=(BaseException,))
        await self._end_run()

    async def _end_run(self) -> None:
        self._stopping = True
        self._wake.set()
        task, self._task = self._task, None
        if task is None:
            return
        try:
            async with asyncio.timeout(10):
                await asyncio.shield(task)
        except TimeoutError:
            await cancel_and_wait(task, quiet=(BaseException,))
        except BaseException:  # a failure was already recorded by the task itself
            pass

    async def probe(self) -> None:
        """A live server answers a ping within the timeout, or is down; a dead one is restarted."""
        session = self._session
        if session is None:
            await self.start()
            return
        try:
            async with asyncio.timeout(self.timeout):
                await session.send_ping()
        except TimeoutError:
            self._down(f"did not answer a ping within {self.timeout:g} s")
        except Exception as exc:
            self._down(f"did not answer a ping: {one_line(mask(describe(exc), self.secrets))}")
        else:
            return
        await self.stop()

    async def call(self, tool: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        """The result's text, and whether the tool reported an error."""
        session = self._session
        if session is None:
            raise ServerUnavailable(self.error or "not running")
        try:
            result = await session.call_tool(tool, arguments)
        except asyncio.CancelledError:
            # Timed out or given up: its answer is not read, whatever the server goes on
            # sending; the server is started again for the next call.
            self._start_again("a call was given up before its answer: its reading was stopped")
            raise
        except MCPError as exc:
            said = one_line(mask(exc.error.message, self.secrets))
            if exc.code == types.CONNECTION_CLOSED:
                self._closed(f"the connection closed: {said}")
                raise ServerUnavailable(self.error or "not running") from exc
            raise CallFailed(said) from exc
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError) as exc:
            self._closed(f"the connection closed: {type(exc).__name__}")
            raise ServerUnavailable(self.error or "not running") from exc
        return result_text(result), bool(result.is_error)

    def _closed(self, reason: str) -> None:
        """The connection ended. When we stopped reading a line past the bound, the stdio
        server is started again now; when it ended by itself (a crash), at the next probe.
        Over HTTP it is one request's stream that ended (an SSE event past the bound among
        them): a fresh session is started now."""
        if self._stdout is not None and self._stdout.overflowed:
            bound = f"{_mb(self.max_bytes)} (SKILLGATE_TOOL_RESULT_MAX_MB)"
            self._start_again(f"it sent a message of more than {bound}: reading stopped")
        elif self.transport == "http":
            self._start_again(reason)
        else:
            self._down(reason)

    def _start_again(self, reason: str) -> None:
        """Out of the turns now; stopped (reading ends) and started again in the background."""
        self._down(reason)
        if self._restart is None or self._restart.done():
            self._restart = asyncio.create_task(self._again(), name=f"mcp-{self.name}-again")

    async def settled(self) -> None:
        """Returns once a start-again in progress has ended (at once when none is)."""
        restart = self._restart
        if restart is not None:
            await asyncio.shield(restart)

    async def _again(self) -> None:
        await self._end_run()
        await self.start()
        if self.error is None:
            log.info("tool server %s was started again", self.name)

    async def _run(self) -> None:
        try:
            async with self._connected() as session:
                await self._list(session)
                self._session, self.error = session, None
                self._ready.set()
                while True:
                    await self._wake.wait()
                    self._wake.clear()
                    if self._stopping:
                        return
                    async with asyncio.timeout(self.timeout):
                        await self._list(session)
        except Exception as exc:
            if not self._stopping:
                self._down(one_line(mask(describe(exc), self.secrets)))
        finally:
            self._session = None
            self._ready.set()
            if not self._stopping and self.error is None:
                self._down("the server exited")

    @contextlib.asynccontextmanager
    async def _connected(self) -> AsyncIterator[ClientSession]:
        async with contextlib.AsyncExitStack() as stack:
            if self.config.command:
                params = StdioServerParameters(
                    command=self.config.command,
                    args=self.config.args,
                    env=self._environment(),
                    cwd=self.config.cwd,
                    # One line that is not UTF-8 is one bad message, not the end of the
                    # reader (with "strict", the SDK's reader dies and the server is wedged).
                    encoding_error_handler="replace",
                )
                errlog = stack.enter_context(stderr_logger(self.name, self.secrets))
                bound: list[BoundedLines] = []
                token = _STDOUT.set((self.max_bytes, bound))
                try:
                    streams = await stack.enter_async_context(stdio_client(params, errlog=errlog))
                finally:
                    _STDOUT.reset(token)
                self._stdout = bound[0] if bound else None
            else:
                assert self.config.url is not None
                client = await stack.enter_async_context(
                    httpx2.AsyncClient(
                        headers=self.config.header_values(),
                        timeout=httpx2.Timeout(self.timeout, read=300),
                        transport=CappedJsonTransport(httpx2.AsyncHTTPTransport(), self.max_bytes),
                    )
                )
                streams = await stack.enter_async_context(
                    streamable_http_client(
                        self.config.url, http_client=client, max_sse_event_size=self.max_bytes
                    )
                )
            session = await stack.enter_async_context(
                ClientSession(streams[0], streams[1], message_handler=self._on_message)
            )
            await session.initialize()
            yield session

    def _environment(self) -> dict[str, str]:
        """The named variables, less any whose value is one of the gateway's secrets."""
        return {k: v for k, v in self.config.environment().items() if v not in self.secrets}

    async def _list(self, session: ClientSession) -> None:
        listed: list[RemoteTool] = []
        cursor: str | None = None
        while True:
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_tools(params=params)
            listed.extend(remote_tool(t) for t in page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        self.tools = listed

    async def _on_message(self, message: Any) -> None:
        # Listed again by the server's own task: the handler must not wait on the session.
        if isinstance(message, types.ToolListChangedNotification):
            self._wake.set()
        elif isinstance(message, Exception):
            log.debug("tool server %s: %s", self.name, one_line(mask(str(message), self.secrets)))

    def _down(self, reason: str) -> None:
        """Out of the turns from now on; said once in the log."""
        self._session = None
        if self.error != reason:
            log.warning("tool server %s is unavailable: %s", self.name, reason)
        self.error = reason


def _mb(size: int) -> str:
    return f"{size / (1024 * 1024):g} MB"


class BoundedLines(anyio.abc.ByteReceiveStream):
    """A server's stdout handed on one whole line at a time (its newline kept), none longer
    than `limit` bytes: past it, reading stops and the stream is broken for good."""

    def __init__(self, stream: anyio.abc.ByteReceiveStream, limit: int) -> None:
        self._buffered = BufferedByteReceiveStream(stream)
        self._limit = limit
        self.overflowed = False

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if self.overflowed:
            raise anyio.BrokenResourceError("a line passed the bound: reading stopped")
        try:
            return await self._buffered.receive_until(b"\n", self._limit) + b"\n"
        except anyio.DelimiterNotFound:
            self.overflowed = True
            raise anyio.BrokenResourceError(
                f"a line passed {self._limit:,} bytes: reading stopped"
            ) from None
        except anyio.IncompleteRead:
            raise anyio.EndOfStream from None

    async def aclose(self) -> None:
        await self._buffered.aclose()


class _BoundedProcess(anyio.abc.Process):
    """The SDK's server process, its stdout read through `BoundedLines`; the rest as it is."""

    def __init__(self, process: anyio.abc.Process, stdout: BoundedLines) -> None:
        self._inner = process
        self._stdout = stdout

    def __getattr__(self, name: str) -> Any:  # the SDK reaches for `_process` at shutdown
        return getattr(self._inner, name)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def wait(self) -> int:
        return await self._inner.wait()

    def terminate(self) -> None:
        self._inner.terminate()

    def kill(self) -> None:
        self._inner.kill()

    def send_signal(self, signal: Signals) -> None:
        self._inner.send_signal(signal)

    @property
    def pid(self) -> int:
        return self._inner.pid

    @property
    def returncode(self) -> int | None:
        return self._inner.returncode

    @property
    def stdin(self) -> anyio.abc.ByteSendStream | None:
        return self._inner.stdin

    @property
    def stdout(self) -> anyio.abc.ByteReceiveStream | None:
        return self._stdout

    @property
    def stderr(self) -> anyio.abc.ByteReceiveStream | None:
        return self._inner.stderr


_STDOUT: ContextVar[tuple[int, list[BoundedLines]] | None] = ContextVar(
    "mcp_stdout_bound", default=None
)
"""Set around `stdio_client` by the server it starts: the bound, and where its reader goes."""

_sdk_spawn: Callable[..., Awaitable[Any]] = sdk_stdio._create_platform_compatible_process


async def _bounded_spawn(*args: Any, **kwargs: Any) -> Any:
    """The SDK's own spawn, its process's stdout then bounded for the server starting it.
    The SDK's stdio transport (spawn, pipes, the spec's shutdown) is kept as it is; only
    the byte stream under its line reader changes."""
    process = await _sdk_spawn(*args, **kwargs)
    wanted = _STDOUT.get()
    if wanted is None or not isinstance(process, anyio.abc.Process) or process.stdout is None:
        return process
    limit, out = wanted
    lines = BoundedLines(process.stdout, limit)
    out.append(lines)
    return _BoundedProcess(process, lines)


sdk_stdio._create_platform_compatible_process = _bounded_spawn


class AnswerTooLarge(httpx2.StreamError):
    """A JSON answer longer than the bound (the SDK turns it into this call's error)."""


class _CappedBody(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, limit: int) -> None:
        self._inner = inner
        self._limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self._inner:
            seen += len(chunk)
            if seen > self._limit:
                raise AnswerTooLarge(
                    f"the answer passed {_mb(self._limit)} (SKILLGATE_TOOL_RESULT_MAX_MB): "
                    "reading stopped"
                )
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class CappedJsonTransport(httpx2.AsyncBaseTransport):
    """An HTTP transport whose JSON answers are cut at `limit` bytes while they are read
    (SSE streams are bounded per event by the SDK; the GET stream lives long)."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, limit: int) -> None:
        self._inner = inner
        self._limit = limit

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        kind = response.headers.get("content-type", "").lower()
        if kind.startswith("application/json") and isinstance(
            response.stream, httpx2.AsyncByteStream
        ):
            response.stream = _CappedBody(response.stream, self._limit)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


def remote_tool(tool: types.Tool) -> RemoteTool:
    hints = tool.annotations
    return RemoteTool(
        name=tool.name,
        description=(tool.description or tool.title or tool.name).strip(),
        schema=dict(tool.input_schema or {"type": "object", "properties": {}}),
        read_only=bool(hints is not None and hints.read_only_hint),
    )


def result_text(result: types.CallToolResult) -> str:
    """What the model reads of a result: its text parts, other parts named."""
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        else:
            parts.append(f"[{block.type} content not shown]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts)


def describe(exc: BaseException) -> str:
    """A failure in one line, the first of a group's failures."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if text != type(exc).__name__ else text


@contextlib.contextmanager
def stderr_logger(name: str, secrets: tuple[str, ...]) -> Any:
    """A file for a child's stderr whose lines reach the log, secrets masked."""
    read_fd, write_fd = os.pipe()
    writer = os.fdopen(write_fd, "w")
    reader = os.fdopen(read_fd, "r", encoding="utf-8", errors="replace")
    thread = threading.Thread(
        target=_log_lines, args=(reader, name, secrets), name=f"mcp-{name}-stderr", daemon=True
    )
    thread.start()
    try:
        yield writer
    finally:
        writer.close()  # the child's copy closes when it exits; then the reader ends


def _log_lines(reader: IO[str], name: str, secrets: tuple[str, ...]) -> None:
    with reader:
        for line in reader:
            if line.strip():
                log.info("tool server %s says: %s", name, one_line(mask(line, secrets)))
