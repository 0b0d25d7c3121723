"""The judge's tokens, counted as learning spend: each same-claim question adds to a meter
that the pass takes onto its record (and that the daily learning budget counts)."""

from __future__ import annotations

from collections.abc import Awaitable

from gateway.core.llm import LLM, Completion, WrappedLLM


class MeteredLLM(WrappedLLM):
    """A model whose every answer's reported tokens are added up until taken."""

    def __init__(self, llm: LLM) -> None:
        super().__init__(llm)
        self.prompt_tokens = 0
        self.completion_tokens = 0

    @property
    def tokens(self) -> int:
        """Tokens counted and not yet taken."""
        return self.prompt_tokens + self.completion_tokens

    def take(self) -> tuple[int, int]:
        """The prompt and answer tokens counted since the last take; the meter starts again."""
        taken = (self.prompt_tokens, self.completion_tokens)
        self.prompt_tokens = self.completion_tokens = 0
        return taken

    async def around(self, answer: Awaitable[Completion]) -> Completion:
        completion = await answer
        self.prompt_tokens += completion.prompt_tokens
        self.completion_tokens += completion.completion_tokens
        return completion
