"""The official `openai` client as every endpoint here uses it (imported on first use)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from openai import AsyncOpenAI


def openai_client(
    base_url: str, api_key: str | None, *, timeout: float, max_retries: int = 0
) -> AsyncOpenAI:
    """An async client for an OpenAI-compatible `/v1` on aiohttp."""
    from openai import AsyncOpenAI, DefaultAioHttpClient

    # Local servers (Ollama, llama.cpp, whisper.cpp) need no key, but the client insists on one.
    # The aiohttp backend: httpx's pool costs more CPU per request under load.
    return AsyncOpenAI(
        base_url=base_url,
        api_key=api_key or "not-needed",
        timeout=timeout,
        max_retries=max_retries,
        http_client=DefaultAioHttpClient(),
    )
