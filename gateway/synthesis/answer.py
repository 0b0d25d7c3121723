"""The model's synthesis answer, read: the fixed contract, before any rule is checked.

The answer follows `{"proposals": [{"kind", "target", "name", "description", "content",
"based_on", "rationale", "allowed_tools"}]}` (the last optional); anything else fails the
batch with SynthesisError. Rule checks (names, sizes, secrets, duplicates, tools) come
later, per proposal, in `screening`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gateway.core.llm_wire import strip_think
from gateway.errors import SynthesisError
from gateway.review.proposals import DraftKind

_CODE_FENCE = re.compile(r"\A```[a-zA-Z]*\s*\n(.*)\n```\s*\Z", re.DOTALL)


class ProposalDraft(BaseModel):
    """One proposal as the model wrote it, before any rule is checked."""

    model_config = ConfigDict(extra="ignore")

    kind: DraftKind
    target: str | None = None
    name: str
    description: str
    content: str
    based_on: list[int | str] = Field(default_factory=list)
    rationale: str = ""
    allowed_tools: list[str] = Field(default_factory=list)
    """The tools the skill tells the assistant to call (names from the prompt's list)."""

    @field_validator("target", mode="before")
    @classmethod
    def _blank_target(cls, value: Any) -> Any:
        return None if isinstance(value, str) and not value.strip() else value


class SynthesisAnswer(BaseModel):
    """The whole answer to one batch."""

    model_config = ConfigDict(extra="ignore")

    proposals: list[ProposalDraft]


def parse_answer(text: str | None) -> list[ProposalDraft]:
    """The drafts in a model answer; SynthesisError when it is not the agreed JSON."""
    raw = strip_think(text or "")[0].strip()
    if not raw:
        raise SynthesisError("the model answered nothing")
    # Some servers wrap JSON in a code fence even in JSON mode.
    fenced = _CODE_FENCE.match(raw)
    if fenced:
        raw = fenced.group(1)
    raw = _json_object(raw)
    try:
        return SynthesisAnswer.model_validate_json(raw).proposals
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'answer'}: {e['msg']}"
            for e in exc.errors()[:5]
        )
        raise SynthesisError(f"the model's answer is not valid proposal JSON ({problems})") from exc


def _json_object(raw: str) -> str:
    """The first JSON object in `raw` when prose surrounds it (plain-text mode); else `raw`."""
    if raw.startswith("{"):
        return raw
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", raw):
        try:
            value, _ = decoder.raw_decode(raw, match.start())
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict) and "proposals" in value:
            return json.dumps(value)
    return raw
