"""Proposals as data: what is staged, reviewed, replaced, and what a rejection remembers.

The model's answer is read in `gateway.synthesis.answer`; a draft that passes every rule
becomes a `Candidate`, staged and stored as a `Proposal`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from gateway.review.trials import TrialSummary

DraftKind = Literal["create", "update"]
# `retire` is never asked of the model: the effect measurement proposes it (see retire.py).
Kind = Literal["create", "update", "retire"]
Status = Literal["pending", "approved", "applied", "rejected", "stale", "rolled_back"]
STATUSES: tuple[str, ...] = ("pending", "approved", "applied", "rejected", "stale", "rolled_back")
PROPOSED_FILE = "SKILL.md.proposed"


class Claim(BaseModel):
    """What a proposal asserts, in the terms used to recognise it again."""

    kind: Kind
    target: str | None = None
    name: str
    description: str
    content_hash: str
    change_text: str = ""
    statement: str | None = None
    """The claim in one short English sentence, as the synthesis model wrote it; None where
    none was written (an older proposal, an imported skill): `said` falls back to the
    description."""

    @property
    def said(self) -> str:
        """What the claim says in a sentence: its statement, else its description."""
        return self.statement or self.description


class Candidate(Claim):
    """A proposal that passed every rule, ready to be staged."""

    content: str
    base_hash: str | None = None
    based_on: list[int] = Field(default_factory=list)
    rationale: str = ""
    model: str | None = None
    generated_at: float
    allowed_tools: list[str] = Field(default_factory=list)
    """The tools the skill names (`allowed-tools`): a declaration, never a grant."""
    possibly_same: list[str] = Field(default_factory=list)
    """The nearest known claims (`rejected #4 verify-identity`), most like first, when the
    same-claim judge could not judge this one: the reviewer decides whether it repeats one."""
    origin: str | None = None
    """Where an imported skill came from (an address, a file name, who imported it); None for
    what the gateway learned itself. An imported proposal always waits for an admin."""
    files: dict[str, str] = Field(default_factory=dict)
    """An imported skill's text files beside its SKILL.md, by path inside its folder: shown on
    the card, written beside the skill on approval, never run by the gateway."""
    trial: TrialSummary | None = None
    """What its trial measured (None: not tried: a retirement, or trials off)."""

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
