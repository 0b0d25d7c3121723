"""How much of the model's context one synthesis call may take: its batch and its answer.

Without a known context (LLM_CONTEXT_TOKENS, or the size llama.cpp reports for the
local model) the batch is SKILLGATE_SYNTHESIS_BATCH_TOKENS and the answer has room for
the most proposals a pass may make. With one, both shrink to fit it, and an answer that
is still cut is reported with the limit that cut it and the setting that moves it.
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway.skills.library import MAX_DESCRIPTION
from gateway.synthesis.answer import MAX_RATIONALE, MAX_STATEMENT

# The system prompt, the skills index and the pending and rejected lists, about.
PROMPT_OVERHEAD = 1500
MIN_ANSWER = 256
MIN_BATCH = 200


def answer_tokens(max_proposals: int, max_skill_bytes: int) -> int:
    """Room for the most proposals a pass may make, every field at the schema's bound.

    A constrained answer then always closes its JSON within the limit: a small model that
    repeats itself up to each bound (SmolLM2 did) is not cut.
    """
    # About 3.5 bytes a token for English prose; 300 tokens of names, ids and JSON each.
    texts = max_skill_bytes + MAX_DESCRIPTION + MAX_RATIONALE + MAX_STATEMENT
    return max_proposals * (texts * 2 // 7 + 300) + 200


@dataclass(frozen=True)
class Budget:
    """The tokens of one call: evidence in the batch, the answer's max_tokens, the context."""

    batch_tokens: int
    answer_tokens: int
    context: int | None = None

    def cut(self, prompt_tokens: int, completion_tokens: int) -> str:
        """Which limit cut an answer, and which setting to change."""
        if self.context is not None and completion_tokens < self.answer_tokens:
            return (
                f"cut at the model's context of {self.context} tokens (LLM_CONTEXT_TOKENS;"
                f" prompt {prompt_tokens} + answer {completion_tokens}): set LLM_CONTEXT_TOKENS"
                " to the model's real context, or lower SKILLGATE_SYNTHESIS_BATCH_TOKENS"
            )
        if self.context is not None:
            return (
                f"cut at the answer limit of {self.answer_tokens} tokens, its share of"
                f" LLM_CONTEXT_TOKENS={self.context}: give the model a larger context (and"
                " LLM_CONTEXT_TOKENS), or lower SKILLGATE_MAX_PROPOSALS_PER_RUN or"
                " SKILLGATE_MAX_SKILL_BYTES"
            )
        return (
            f"cut at the answer limit of {self.answer_tokens} tokens (from"
            " SKILLGATE_MAX_PROPOSALS_PER_RUN and SKILLGATE_MAX_SKILL_BYTES), or at the"
            f" server's own limit (prompt {prompt_tokens} tokens): set LLM_CONTEXT_TOKENS"
            " to the model's context so that synthesis fits it"
        )


def fit(context: int | None, batch_tokens: int, max_proposals: int, max_skill_bytes: int) -> Budget:
    """The batch and answer sizes for a context (None: as configured, unbounded by one)."""
    answer = answer_tokens(max_proposals, max_skill_bytes)
    if context is None:
        return Budget(batch_tokens, answer)
    room = max(context - PROMPT_OVERHEAD, MIN_ANSWER + MIN_BATCH)
    answer = max(MIN_ANSWER, min(answer, room // 2))
    return Budget(max(MIN_BATCH, min(batch_tokens, room - answer)), answer, context)
