"""The model's synthesis answer, read: the fixed contract, before any rule is checked.

The answer follows `{"proposals": [{"kind", "target", "name", "description", "content",
"based_on", "rationale", "statement", "allowed_tools"}]}` (the last two optional: an answer
written before `statement` existed still reads); anything else fails the batch with
SynthesisError. Rule checks (names, sizes, secrets, duplicates, tools) come
later, per proposal, in `screening`. The schema the model is asked for (`answer_schema`)
carries each field's real bounds, so a server that constrains output to it stops a small
model's runaway field at its limit instead of at the token cap.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gateway.core.llm_wire import strip_think
from gateway.errors import SynthesisError
from gateway.review.proposals import DraftKind
from gateway.skills.library import MAX_DESCRIPTION

_CODE_FENCE = re.compile(r"\A```[a-zA-Z]*\s*\n(.*)\n```\s*\Z", re.DOTALL)
MAX_RATIONALE = 600
MAX_STATEMENT = 300
"""Characters of a statement: the claim in one short English sentence."""
NEW_NAME = r"^[a-z0-9]{1,15}(-[a-z0-9]{1,15}){0,3}$"
"""A new skill's name in the schema: the slug rule, with its length in the pattern itself
(four words of up to 15, 63 characters), because llama.cpp ignores `maxLength` beside a
`pattern`: SmolLM2 wrote a 1,400-character `target` under `maxLength: 64`."""
"""Characters of a rationale: one or two sentences for the reviewer, with room to spare."""


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
    statement: str = ""
    """The claim in one short English sentence, whatever the skill's language ("" if none)."""
    allowed_tools: list[str] = Field(default_factory=list)
    """The tools the skill tells the assistant to call (names from the prompt's list)."""

    @field_validator("target", mode="before")
    @classmethod
    def _blank_target(cls, value: Any) -> Any:
        return None if isinstance(value, str) and not value.strip() else value


class ImportedDraft(ProposalDraft):
    """A skill from elsewhere, read from its SKILL.md: screened like a model's draft.

    Its own class, so no answer of the model can claim an origin or carry files.
    """

    origin: str
    files: dict[str, str] = Field(default_factory=dict)


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


def answer_schema(
    max_proposals: int,
    max_bytes: int,
    shown: Sequence[int] = (),
    tools: Sequence[str] = (),
    skills: Sequence[str] = (),
) -> dict[str, Any]:
    """The answer's JSON schema, with the bounds screening enforces.

    A name is an enabled skill's (`skills`) or a new slug (NEW_NAME); a target only an
    enabled skill's; the texts keep their size limits (a body's bytes are at least its
    characters); `based_on` names only sessions shown and `allowed_tools` only tools
    listed; at most `max_proposals` proposals.
    """
    existing: list[dict[str, Any]] = [{"type": "string", "enum": sorted(set(skills))}]
    if not skills:
        existing = []
    sessions: dict[str, Any] = {"type": "integer"}
    if shown:
        sessions["enum"] = sorted(set(shown))
    tool_names: dict[str, Any] = {"type": "string"}
    if tools:
        tool_names["enum"] = sorted(set(tools))
    draft = {
        "type": "object",
        "properties": {
            # Evidence and reason first: the fields after them are written in their light.
            "based_on": {"type": "array", "items": sessions, "maxItems": len(set(shown)) or 50},
            "rationale": {"type": "string", "maxLength": MAX_RATIONALE},
            "kind": {"type": "string", "enum": ["create", "update"]},
            "target": {"anyOf": [*existing, {"type": "null"}]} if existing else {"type": "null"},
            "name": {"anyOf": [*existing, {"type": "string", "pattern": NEW_NAME}]},
            "description": {"type": "string", "minLength": 1, "maxLength": MAX_DESCRIPTION},
            "content": {"type": "string", "minLength": 1, "maxLength": max_bytes},
            "statement": {"type": "string", "minLength": 1, "maxLength": MAX_STATEMENT},
            "allowed_tools": {
                "type": "array",
                "items": tool_names,
                "maxItems": len(set(tools)),
            },
        },
    }
    proposals = {"type": "array", "items": draft, "maxItems": max(max_proposals, 0)}
    return {"type": "object", "properties": {"proposals": proposals}}
