"""What a run depends on: the same config gives the same figures; the worlds the report compares."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

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

    seed: int = 1
    cycles: int = 6
    users: int = 12
    held_out: int = 8
    questions: int = 3
    """Questions each training user asks per cycle."""
    held_out_questions: int = 4
    skill_holdout: float = 0.1
    index_budget: int = 800
    max_proposals: int = 3
    bad_share: float = 0.5
    """How often the scripted model adds a poor proposal, a repeat or a copy to a pass."""
    paraphrase: bool = False
    """The model rewords and renames what it proposes again."""
    false_reject: float = 0.0
    """How often the reviewer rejects a proposal it would approve."""
    false_approve: float = 0.0
    """How often the reviewer approves a proposal it would reject."""
    judge_accuracy: float | None = None
    """With a value, each proposal is tried before review (`eval/trial.py`) with a simulated
    judge right this share of the time; None: no trial, the reviewer reads the text alone."""
    trial_turns: int = 6
    """Rated turns a trial tries per side (what it claims to fix, what it might break)."""
    habits: Habits = field(default_factory=Habits)
    bank: str = "held-out"
    """The users' phrase bank (`world.BANKS`): `held-out`, or `tuned` (the reader's own)."""
    real_model: RealModel | None = None
    world: str = "default"


@dataclass(frozen=True)
class World:
    """A named perturbation of the default world."""

    name: str
    what: str
    changes: dict[str, Any]

    base: str = ""
    """The world this one adds a trial to (`with_trial`); empty for the worlds themselves."""

    def config(self, base: Config, seed: int, bank: str | None = None) -> Config:
        return replace(base, seed=seed, world=self.name, bank=bank or base.bank, **self.changes)

    @property
    def judge(self) -> float | None:
        """The simulated judge's accuracy when proposals are tried in this world."""
        value = self.changes.get("judge_accuracy")
        return None if value is None else float(value)

    def with_trial(self, accuracy: float) -> World:
        """This world with every proposal tried before review, the judge right `accuracy`."""
        return World(
            f"{self.name}, trial (judge {accuracy:.0%})",
            f"{self.what}; each proposal tried before review, simulated judge right"
            f" {accuracy:.0%} of the time",
            {**self.changes, "judge_accuracy": accuracy},
            base=self.name,
        )


WORLDS: tuple[World, ...] = (
    World("default", "users rate 85% of answers; 12 users ask 3 questions per cycle", {}),
    World("sparse ratings", "users rate 20% of answers", {"habits": Habits(rate=0.2)}),
    World("few conversations", "6 conversations per cycle", {"users": 6, "questions": 1}),
    World(
        "reviewer rejects good",
        "the reviewer rejects 20% of what it should approve",
        {"false_reject": 0.2},
    ),
    World(
        "reviewer approves bad",
        "the reviewer approves 30% of what it should reject",
        {"false_approve": 0.3},
    ),
    World(
        "paraphrasing model",
        "the model rewords and renames its repeats and copies, and makes more of them",
        {"paraphrase": True, "bad_share": 0.9},
    ),
    World(
        "realistic mix",
        "30% rated, 8 conversations per cycle, reviewer errs 10% / 15%, paraphrasing model",
        {
            "habits": Habits(rate=0.3),
            "users": 8,
            "questions": 1,
            "false_reject": 0.1,
            "false_approve": 0.15,
            "paraphrase": True,
            "bad_share": 0.7,
        },
    ),
)
WORLD_NAMES = tuple(w.name for w in WORLDS)
