"""The unix sockets of servers this process runs as its own children (the on-board model).

Whoever starts such a child registers, under the socket's path, how to open a session to it
whose every connection is checked to be answered by that child
(`gateway.runtime.own_server`); every client of a server on that path (the model's calls,
embeddings, speech, pictures) opens its sessions that way, and a path not registered is an
operator's server (`LLM_UNIX_SOCKET`), reached as it is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from httpx_aiohttp import AiohttpTransport

OWN_SERVERS: dict[str, Callable[[], Any]] = {}
"""Socket path -> a factory of an aiohttp `ClientSession` whose connections are checked."""


def transport(unix_socket: str | None, **options: Any) -> AiohttpTransport:
    """httpx's transport on aiohttp for a model server's clients: through `unix_socket` where
    the server is on one, each connection's peer checked where it is our own child's."""
    from httpx_aiohttp import AiohttpTransport

    own = OWN_SERVERS.get(unix_socket) if unix_socket is not None else None
    return AiohttpTransport(uds=unix_socket, client=own, **options)
