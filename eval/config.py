"""What a run depends on: the same config gives the same figures."""

from __future__ import annotations

from dataclasses import dataclass, field

from eval.world import Habits


@dataclass(frozen=True)
class RealModel:
    """An OpenAI-compatible endpoint to evaluate instead of the scripted model."""

    base_url: str
    model: str
    api_key: str | None = None


@dataclass(frozen=True)
class Config:
    """The simulated world, the gateway's settings that matter here, and the model."""

    seed: int = 7
    cycles: int = 8
    users: int = 16
    held_out: int = 8
    questions: int = 3
    """Questions each training user asks per cycle."""
    held_out_questions: int = 4
    skill_holdout: float = 0.1
    index_budget: int = 800
    max_proposals: int = 3
    bad_share: float = 0.5
    """How often the scripted model adds a poor proposal or a repeat to a pass."""
    reviewer_slips: int = 1
    """How many proposals against users' wishes the reviewer wrongly approves."""
    habits: Habits = field(default_factory=Habits)
    real_model: RealModel | None = None
