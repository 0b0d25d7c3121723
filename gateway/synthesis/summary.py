"""What a synthesis pass reports: proposals made, suppressed, refused, checked, and its counts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, Field

from gateway.review.proposals import Candidate, Proposal
from gateway.review.repeats import RejectedRepeat
from gateway.synthesis.runs import RunCheck
from gateway.synthesis.sameness import Decision
from gateway.synthesis.screening import Dropped


class ProposalBrief(BaseModel):
    """A proposal made by a run."""

    id: int
    kind: str
    name: str
    target: str | None
    description: str
    status: str


class DroppedBrief(BaseModel):
    """A proposal a run did not stage, and why (a repeat: what it matched, and how)."""

    name: str
    reason: str
    matched: int | None = None
    matched_skill: str | None = None
    detail: str | None = None


class BatchReport(BaseModel):
    """Progress: a batch about to be asked (`finished` false), or one done."""

    index: int
    sessions: int
    skipped: int
    proposed: int = 0
    suppressed: int = 0
    refused: int = 0
    finished: bool = True


class HeldBrief(BaseModel):
    """A candidate held back: its name, why, how often asked, when it is asked next."""

    name: str
    reason: str
    tries: int
    next_at: float
    waits_for: int | None = None
    """The pending proposal it waits for (then `tries` is 0 and `next_at` unused)."""


class RunSummary(BaseModel):
    """What a pass did: proposals made, suppressed and refused, its counts and its error."""

    run_id: int | None = None
    status: Literal["ok", "failed", "busy"]
    trigger: str
    sessions: int = 0
    skipped: int = 0
    batches: int = 0
    proposed: list[ProposalBrief] = Field(default_factory=list)
    suppressed: list[DroppedBrief] = Field(default_factory=list)
    refused: list[DroppedBrief] = Field(default_factory=list)
    checks: list[RunCheck] = Field(default_factory=list)
    """Every same-claim decision: staged or suppressed by the model's answer, or held back."""
    repeats: list[RejectedRepeat] = Field(default_factory=list, exclude=True)
    """The suppressed repeats of standing rejections, with their wording (the admins' notice)."""
    model: str | None = None
    prompt_tokens: int = 0
    error: str | None = None
    stopped: str | None = None
    """Why learning stopped early without failing (the day's learning budget reached)."""
    held: list[HeldBrief] = Field(default_factory=list)
    """The candidates waiting for a same-claim answer after this pass, and when each is asked."""
    judge: str | None = None
    """The same-claim judge's calibration, when it was tried (`judge-model: unable to judge…`)."""

    @property
    def about(self) -> str:
        return f"synthesis run {self.run_id}"


Progress = Callable[[BatchReport], None]


def drafted(summary: RunSummary) -> int:
    """Proposals the model made this pass (retirements come from measurement, not the model)."""
    return sum(1 for p in summary.proposed if p.kind != "retire")


def check_brief(name: str, d: Decision) -> RunCheck:
    return RunCheck(
        name=name,
        decision=d.outcome,
        compared=[k.label() for k in d.compared],
        reason=d.detail,
        matched=d.known.proposal_id if d.known else None,
        matched_skill=d.known.skill if d.known else None,
    )


def dropped_brief(d: Dropped) -> DroppedBrief:
    return DroppedBrief(
        name=d.name,
        reason=d.reason,
        matched=d.matched,
        matched_skill=d.matched_skill,
        detail=d.detail,
    )


def rejected_repeat(proposal_id: int, c: Candidate) -> RejectedRepeat:
    """The wording of a candidate that repeats rejected proposal `proposal_id`."""
    return RejectedRepeat(
        proposal_id=proposal_id, name=c.name, description=c.description, content=c.content
    )


def brief(p: Proposal) -> ProposalBrief:
    return ProposalBrief(
        id=p.id,
        kind=p.kind,
        name=p.name,
        target=p.target,
        description=p.description,
        status=p.status,
    )


def report(
    summary: RunSummary, before: tuple[int, int, int], shown: int, skipped: int
) -> BatchReport:
    return BatchReport(
        index=summary.batches,
        sessions=shown,
        skipped=skipped,
        proposed=len(summary.proposed) - before[0],
        suppressed=len(summary.suppressed) - before[1],
        refused=len(summary.refused) - before[2],
    )
