"""The judge's tokens, counted as learning spend: each same-claim question adds to a meter
that the pass takes onto its record (and that the daily learning budget counts)."""

from __future__ import annotations

from typing import Any

from gateway.core.llm import LLM, Completion, PartialText


class MeteredLLM:
    """A model whose every answer's reported tokens are added up until taken."""

    def __init__(self, llm: LLM) -> None:
        self.llm = llm
        self.prompt_tokens = 0
        self.completion_tokens = 0

    @property
    def model(self) -> str | None:
        return self.llm.model

    @model.setter
    def model(self, value: str | None) -> None:
        self.llm.model = value

    @property
    def tokens(self) -> int:
        """Tokens counted and not yet taken."""
        return self.prompt_tokens + self.completion_tokens

    def take(self) -> tuple[int, int]:
        """The prompt and answer tokens counted since the last take; the meter starts again."""
        taken = (self.prompt_tokens, self.completion_tokens)
        self.prompt_tokens = self.completion_tokens = 0
        return taken

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
        completion = await self.llm.complete(
            messages,
            tools=tools,
            json_mode=json_mode,
            json_schema=json_schema,
            max_tokens=max_tokens,
            retry_timeouts=retry_timeouts,
            partial=partial,
            temperature=temperature,
        )
        self.prompt_tokens += completion.prompt_tokens
        self.completion_tokens += completion.completion_tokens
        return completion

    async def ping(self) -> str:
        return await self.llm.ping()

    async def close(self) -> None:
        await self.llm.close()
