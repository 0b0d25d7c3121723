"""The official `openai` client as every endpoint here uses it (imported on first use)."""

from __future__ import annotations

import asyncio
import importlib
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from openai import AsyncOpenAI


async def load_openai() -> None:
    """Import the openai package in a worker thread if it is not yet: about a second of CPU
    and 17 MB, which the event loop (every chat in flight) should not wait for. Only the
    features that use the client (speech, embeddings) call this, on their first use."""
    if "openai" not in sys.modules:
        await asyncio.to_thread(importlib.import_module, "openai")


def uses_openai(*endpoints: object) -> bool:
    """Whether any of these is an endpoint the openai client serves (see `settle`)."""
    return any(isinstance(e, OpenAIEndpoint) for e in endpoints)


def openai_client(
    base_url: str,
    api_key: str | None,
    *,
    timeout: float,
    max_retries: int = 0,
    unix_socket: str | None = None,
) -> AsyncOpenAI:
    """An async client for an OpenAI-compatible `/v1` on aiohttp (through `unix_socket`, the
    server's unix domain socket, when given)."""
    from openai import AsyncOpenAI, DefaultAioHttpClient

    http_client = DefaultAioHttpClient()
    if unix_socket is not None:
        from gateway.core.unix_sockets import transport

        http_client = DefaultAioHttpClient(transport=transport(unix_socket))
    # Local servers (Ollama, llama.cpp, whisper.cpp) need no key, but the client insists on one.
    # The aiohttp backend: httpx's pool costs more CPU per request under load.
    return AsyncOpenAI(
        base_url=base_url,
        api_key=api_key or "not-needed",
        timeout=timeout,
        max_retries=max_retries,
        http_client=http_client,
    )


class OpenAIEndpoint:
    """One model at an OpenAI-compatible endpoint: its client is made on first use."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        unix_socket: str | None = None,
    ) -> None:
        self.base_url = base_url
        self.unix_socket = unix_socket
        self.model = model
        self._api_key = api_key
        self._timeout = timeout
        self._client: AsyncOpenAI | None = None

    @property
    def _secrets(self) -> tuple[str, ...]:
        """What to mask in the server's error messages."""
        return (self._api_key,) if self._api_key else ()

    def _get_client(self) -> AsyncOpenAI:
        if self._client is None:
            self._client = openai_client(
                self.base_url,
                self._api_key,
                timeout=self._timeout,
                max_retries=1,
                unix_socket=self.unix_socket,
            )
        return self._client

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None
