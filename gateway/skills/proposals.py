"""Proposals as data: what the model answers, what is staged, what a rejection remembers.

The model's answer follows the fixed synthesis contract
`{"proposals": [{"kind", "target", "name", "description", "content", "based_on",
"rationale"}]}`; anything else fails the batch with SynthesisError. Rule checks
(names, sizes, secrets, duplicates) come later, per proposal, in `screening`.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gateway.core.llm_wire import strip_think
from gateway.errors import SynthesisError

DraftKind = Literal["create", "update"]
# `retire` is never asked of the model: the effect measurement proposes it (see retire.py).
Kind = Literal["create", "update", "retire"]
Status = Literal["pending", "approved", "applied", "rejected", "stale", "rolled_back"]
STATUSES: tuple[str, ...] = ("pending", "approved", "applied", "rejected", "stale", "rolled_back")
PROPOSED_FILE = "SKILL.md.proposed"
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


class Claim(BaseModel):
    """What a proposal asserts, in the terms used to recognise it again."""

    kind: Kind
    target: str | None = None
    name: str
    description: str
    content_hash: str
    change_text: str = ""


class Candidate(Claim):
    """A proposal that passed every rule, ready to be staged."""

    content: str
    base_hash: str | None = None
    based_on: list[int] = Field(default_factory=list)
    rationale: str = ""
    model: str | None = None
    generated_at: float

    @property
    def slug(self) -> str:
        """The skill folder this proposal writes."""
        return self.target or self.name


class Proposal(Candidate):
    """A stored proposal and its review state."""

    id: int
    run_id: int | None = None
    status: Status = "pending"
    decided_by: str | None = None
    decided_at: float | None = None
    reason: str | None = None
    promoted_at: float | None = None
    reopened_by: str | None = None
    reopened_at: float | None = None
    reopen_reason: str | None = None
    """Set when an admin reopened this proposal after a rejection."""


class Rejection(Claim):
    """A tombstone: a refused proposal, remembered until an admin reopens it."""

    id: int | None = None
    proposal_id: int | None = None
    reason: str | None = None
    decided_by: str | None = None
    rejected_at: float


class SkillVersion(BaseModel):
    """A live SKILL.md text that an approval replaced, kept for rollback."""

    id: int
    slug: str
    content: str
    content_hash: str
    replaced_at: float
    proposal_id: int | None = None


class RunRecord(BaseModel):
    """One synthesis pass: what it read, proposed, suppressed, and how it ended."""

    id: int
    trigger: str
    status: Literal["running", "ok", "failed"] = "running"
    started_at: float
    finished_at: float | None = None
    sessions: int = 0
    skipped: int = 0
    batches: int = 0
    proposed: int = 0
    suppressed: int = 0
    refused: int = 0
    model: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str | None = None


class RunDropped(BaseModel):
    """A draft a run did not stage: a suppressed repeat (with what it matched) or a refusal."""

    kind: Literal["suppressed", "refused"]
    name: str
    reason: str
    matched: int | None = None
    matched_skill: str | None = None
    """A live skill the repeat copies (it has no proposal id)."""
    detail: str | None = None
    """How the likeness was judged: the same text, word or embedding likeness, the model."""
