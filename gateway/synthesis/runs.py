"""A synthesis pass as recorded: what it read, proposed, suppressed, refused, and how it ended."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel


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
    stopped: str | None = None
    """Why learning stopped early without failing (the day's learning budget reached)."""


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


class Repeat(BaseModel):
    """A suppressed repeat of a proposal: which run, under what name, judged how, when."""

    run_id: int
    name: str
    detail: str | None = None
    at: float


class RunCheck(BaseModel):
    """One same-claim check: the candidate, the decision, what it was compared with and why."""

    name: str
    decision: Literal["same", "different", "held", "undecided"]
    compared: list[str]
    """The known claims the model was shown, most like first (`rejected #4 verify-identity`)."""
    reason: str
    matched: int | None = None
    matched_skill: str | None = None
