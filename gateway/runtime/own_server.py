"""Connections to a server the gateway runs as its own child on a unix socket (the on-board
model): each one is checked, before a byte is sent, to be answered by that child.

The socket's directory keeps other users out; this check keeps out any other process, of
this user's too, that bound the path while the child was dead or restarting: the kernel
says which process listens on a unix socket (`SO_PEERCRED`), and the child that serves it
now says who it must be (`expected`: None while no child serves, so nothing is sent then).
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Callable

import aiohttp
from aiohttp.client_proto import ResponseHandler
from aiohttp.client_reqrep import ClientRequest
from aiohttp.tracing import Trace


def peer_pid(sock: socket.socket) -> int | None:
    """The pid of the process listening on the unix socket `sock` is connected to (None
    where the platform does not tell: Linux does)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    creds = sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    return int(struct.unpack("3i", creds)[0])


LIMIT = 1000
"""Connections at once, as the model client's pool (`llm_http.MAX_CONNECTIONS`)."""


class NotOurServer(aiohttp.ClientConnectionError):
    """The process on the socket is not the child that should serve it."""


class OwnServerConnector(aiohttp.UnixConnector):
    """aiohttp's unix connector, refusing a connection whose peer is not `expected()`."""

    def __init__(self, path: str, expected: Callable[[], int | None], limit: int) -> None:
        super().__init__(path, limit=limit)
        self._expected = expected

    async def _create_connection(
        self, req: ClientRequest, traces: list[Trace], timeout: aiohttp.ClientTimeout
    ) -> ResponseHandler:
        proto = await super()._create_connection(req, traces, timeout)
        transport = proto.transport
        sock = transport.get_extra_info("socket") if transport is not None else None
        peer = peer_pid(sock) if sock is not None else None
        want = self._expected()
        if want is None or (sock is None or (peer is not None and peer != want)):
            proto.close()
            who = f"pid {peer}" if peer is not None else "a process"
            raise NotOurServer(
                f"{who} listens on {self.path}, not the server this gateway started"
                f" ({'none runs now' if want is None else f'pid {want}'}): nothing was sent"
            )
        return proto


def own_session(path: str, expected: Callable[[], int | None]) -> aiohttp.ClientSession:
    """A session whose every connection goes to the unix socket `path` and is checked to be
    answered by `expected()` (see `gateway.core.unix_sockets`)."""
    return aiohttp.ClientSession(connector=OwnServerConnector(path, expected, LIMIT))
