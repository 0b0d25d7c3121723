"""The unix sockets of servers this process runs as its own children (the on-board model).

Whoever starts such a child registers, under the socket's path, how to open a session to it
whose every connection is checked to be answered by that child
(`gateway.runtime.own_server`); every client of a server on that path (the model's calls,
embeddings, speech, pictures) opens its sessions that way, and a path not registered is an
operator's server (`LLM_UNIX_SOCKET`), reached as it is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

OWN_SERVERS: dict[str, Callable[[], Any]] = {}
"""Socket path -> a factory of an aiohttp `ClientSession` whose connections are checked."""
