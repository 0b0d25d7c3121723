"""The HTTP server's own limits: slow senders, too many connections, bodies sent slowly.

aiohttp waits for a request's head and body as long as the client likes, so a
thousand connections each sending a byte now and then would use up the
process's file descriptors and starve the webhooks. `serve` runs the app with:

* a deadline for each request's head (`head_seconds`) from the moment the
  connection opens or its previous answer was sent; a connection that misses it
  is closed;
* at most `max_connections` at once: a new one beyond that closes the oldest
  connection still waiting for its head (the slow senders), so /healthz and the
  webhooks still get in; when every connection is busy, the new one is closed;
* a deadline for the body (`body_seconds`, the `bounded_body` middleware and
  `read_body`): 408 when it is not all there in time.

Lines logged again and again (a flood of refused connections) are thinned by
`gateway.logs.Throttle`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from aiohttp.web_protocol import RequestHandler

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Limits:
    """How long a client may take to send, and how many connections are held."""

    head_seconds: float = 10.0
    body_seconds: float = 30.0
    max_connections: int = 4000


LIMITS: web.AppKey[Limits] = web.AppKey("serving.limits", Limits)
OWN_BODY: web.AppKey[frozenset[str]] = web.AppKey("serving.own_body", frozenset)
"""Paths whose handlers check credentials first and then read the body with `read_body`."""


def _limits(request: web.Request) -> Limits:
    return request.config_dict.get(LIMITS) or Limits()


async def read_body(request: web.Request, limit: int) -> bytes:
    """The body, at most `limit` bytes (413 beyond) and within the body deadline (408)."""
    if (request.content_length or 0) > limit:
        raise web.HTTPRequestEntityTooLarge(limit, request.content_length or 0)
    if request.content.is_eof():
        # The whole body came with the head (a webhook's is a few KB): nothing to wait for,
        # so no deadline to set and no chunks to iterate.
        whole = request.content.read_nowait()
        if len(whole) > limit:
            raise web.HTTPRequestEntityTooLarge(limit, len(whole))
        return whole
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(_limits(request).body_seconds):
            async for chunk in request.content.iter_any():
                size += len(chunk)
                if size > limit:
                    raise web.HTTPRequestEntityTooLarge(limit, size)
                chunks.append(chunk)
    except TimeoutError:
        raise web.HTTPRequestTimeout(text="the body was not sent in time") from None
    return b"".join(chunks)


@web.middleware
async def bounded_body(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """Read every body within the deadline before the handler (cached for read/post/json)."""
    guard = request.config_dict.get(GUARD)
    if guard is not None:
        guard.head_received(request.protocol)
    try:
        if request.can_read_body and request.path not in request.config_dict.get(
            OWN_BODY, frozenset()
        ):
            try:
                async with asyncio.timeout(_limits(request).body_seconds):
                    await request.read()
            except TimeoutError:
                raise web.HTTPRequestTimeout(text="the body was not sent in time") from None
        return await handler(request)
    finally:
        if guard is not None:
            guard.answered(request.protocol)


class ConnectionGuard:
    """Open connections in the order they came, each with a deadline for its next head."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._open: dict[Any, asyncio.TimerHandle | None] = {}
        """Handler -> the timer of a connection waiting for a head (None while busy)."""
        self._transports: dict[Any, asyncio.Transport] = {}

    def install(self, server: web.Server) -> None:
        """Hook into `server`'s bookkeeping of connections."""
        made, lost = server.connection_made, server.connection_lost

        def connection_made(handler: RequestHandler, transport: asyncio.Transport) -> None:
            made(handler, transport)
            self.opened(handler, transport)

        def connection_lost(handler: RequestHandler, exc: BaseException | None = None) -> None:
            self.closed(handler)
            lost(handler, exc)

        setattr(server, "connection_made", connection_made)  # noqa: B010
        setattr(server, "connection_lost", connection_lost)  # noqa: B010

    @property
    def count(self) -> int:
        return len(self._open)

    def opened(self, handler: Any, transport: asyncio.Transport) -> None:
        if len(self._open) >= self.limits.max_connections:
            waiting = next((h for h, timer in self._open.items() if timer is not None), None)
            if waiting is None:
                log.warning("at %d connections, all busy: refusing one", len(self._open))
                transport.abort()
                return
            log.warning("at %d connections: closing the oldest idle one", len(self._open))
            self._drop(waiting)
        self._transports[handler] = transport
        self._open[handler] = None
        self._arm(handler)

    def closed(self, handler: Any) -> None:
        timer = self._open.pop(handler, None)
        if timer is not None:
            timer.cancel()
        self._transports.pop(handler, None)

    def head_received(self, handler: Any) -> None:
        timer = self._open.get(handler)
        if timer is not None:
            timer.cancel()
        if handler in self._open:
            self._open[handler] = None

    def answered(self, handler: Any) -> None:
        if handler in self._open:
            self._arm(handler)

    def _arm(self, handler: Any) -> None:
        loop = asyncio.get_running_loop()
        self._open[handler] = loop.call_later(self.limits.head_seconds, self._expire, handler)

    def _expire(self, handler: Any) -> None:
        transport = self._transports.get(handler)
        if transport is None or handler not in self._open:
            return
        if isinstance(transport, asyncio.WriteTransport) and transport.get_write_buffer_size():
            self._arm(handler)  # an answer is still going out
            return
        self._drop(handler)

    def _drop(self, handler: Any) -> None:
        transport = self._transports.get(handler)
        self.closed(handler)
        if transport is not None:
            transport.abort()


GUARD: web.AppKey[ConnectionGuard] = web.AppKey("serving.guard", ConnectionGuard)


async def start(
    app: web.Application,
    host: str | None = None,
    port: int | None = None,
    *,
    sock: socket.socket | None = None,
    limits: Limits | None = None,
    shutdown_timeout: float = 20.0,
    handle_signals: bool = False,
) -> tuple[web.AppRunner, web.BaseSite]:
    """Start `app` on host:port (or a socket bound already) with the limits.

    Stop it with `runner.cleanup()`.
    """
    limits = limits or Limits()
    app[LIMITS] = limits
    guard = app[GUARD] = ConnectionGuard(limits)
    runner = web.AppRunner(
        app,
        access_log=None,
        handle_signals=handle_signals,
        shutdown_timeout=shutdown_timeout,
        keepalive_timeout=limits.head_seconds,
    )
    await runner.setup()
    assert runner.server is not None
    guard.install(runner.server)
    site: web.BaseSite
    if sock is not None:
        site = web.SockSite(runner, sock)
    else:
        site = web.TCPSite(runner, host, port, backlog=1024)
    await site.start()
    return runner, site


def run(
    app: web.Application, sock: socket.socket, *, limits: Limits, shutdown_timeout: float
) -> None:
    """Serve on a bound socket until SIGTERM or SIGINT, then shut down gracefully."""

    async def main() -> None:
        runner, _ = await start(
            app,
            sock=sock,
            limits=limits,
            shutdown_timeout=shutdown_timeout,
            handle_signals=True,
        )
        try:
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()

    loop = asyncio.new_event_loop()
    task = loop.create_task(main())
    try:
        loop.run_until_complete(task)
    except (web.GracefulExit, KeyboardInterrupt):
        pass
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, web.GracefulExit):
                loop.run_until_complete(task)
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
