"""A chain of models: the primary, then each fallback in order when one fails or refuses."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from gateway.core.llm import LLM, Completion
from gateway.core.stream import PartialText
from gateway.errors import ContextOverflow, ModelError, ModelNotConfigured

log = logging.getLogger(__name__)


class FallbackLLM:
    """Tries each model in order; the completion names the one that answered."""

    def __init__(self, chain: Sequence[LLM]) -> None:
        if not chain:
            raise ValueError("a fallback chain needs at least one model")
        self.chain = list(chain)
        self.model: str | None = self.chain[0].model

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        json_mode: bool = False,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int | None = None,
        retry_timeouts: bool = False,
        partial: PartialText | None = None,
        temperature: float | None = None,
    ) -> Completion:
        failures: list[str] = []
        last: ModelError | None = None
        for llm in self.chain:
            try:
                completion = await llm.complete(
                    messages,
                    tools=tools,
                    json_mode=json_mode,
                    json_schema=json_schema,
                    max_tokens=max_tokens,
                    retry_timeouts=retry_timeouts,
                    partial=partial,  # each model resets it as it starts
                    temperature=temperature,
                )
            except (ModelNotConfigured, ContextOverflow):
                raise  # the caller's to handle: another model would not help it
            except ModelError as exc:
                log.warning("model %s failed, trying the next: %s", llm.model, exc)
                failures.append(f"{llm.model}: {exc}")
                last = exc
                continue
            completion.model = completion.model or llm.model
            if failures:
                completion.notes.append(
                    f"answered by fallback {llm.model} after: {'; '.join(failures)}"
                )
            return completion
        assert last is not None
        raise type(last)("every model failed: " + "; ".join(failures)) from last

    async def ping(self) -> str:
        return await self.chain[0].ping()

    async def close(self) -> None:
        for llm in self.chain:
            await llm.close()


def parse_fallbacks(
    entries: Sequence[str], keys: Sequence[str], base_url: str, api_key: str | None
) -> list[tuple[str, str, str | None]]:
    """(model, base URL, key) per `model` or `model@base_url` entry; keys align by position."""
    chain = []
    for index, entry in enumerate(entries):
        model, _, url = entry.partition("@")
        url = url.strip().rstrip("/") or base_url
        key = keys[index].strip() if index < len(keys) else ""
        chain.append((model.strip(), url, key or (api_key if url == base_url else None)))
    return chain
