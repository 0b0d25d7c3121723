"""Tool calls in the effect measurement.

Tool calls are counted per arm over every answer, rated or not (a failure needs no
rating): calls and failed calls (an error, a timeout, the server down) per answer, and
among the answers that called a tool, the share with a failed call. A skill *fails
tools* when that share is higher with it than without it, by the same rules as
*harmful*: both samples hold the minimum evidence (answers that called a tool), the
difference reaches the margin, and the same sequential test has reached 1/alpha. It is
a flag on the skill's page; the verdict on ratings is unchanged by it.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from gateway.skills.rates import EffectThresholds, Tally, difference_interval, rounded
from gateway.skills.verdict import decide


class ToolTally(BaseModel):
    """The tool calls of the answers in one arm, rated or not."""

    model_config = ConfigDict(frozen=True)

    answers: int = 0
    calling: int = 0
    """Answers that called a tool."""
    failing: int = 0
    """Answers with at least one failed call."""
    calls: int = 0
    failed: int = 0

    def per_answer(self, count: int) -> float | None:
        return count / self.answers if self.answers else None

    @property
    def failures(self) -> Tally:
        """The answers that called a tool as a tally: `up` for those that failed one."""
        return Tally(answers=self.calling, up=self.failing, down=self.calling - self.failing)

    def __add__(self, other: ToolTally) -> ToolTally:
        return ToolTally(
            answers=self.answers + other.answers,
            calling=self.calling + other.calling,
            failing=self.failing + other.failing,
            calls=self.calls + other.calls,
            failed=self.failed + other.failed,
        )


NO_CALLS = ToolTally()
"""The tool tally of an arm nothing was counted in (frozen, shared like `NO_ANSWERS`)."""


def tool_figures(t: ToolTally, z: float) -> dict[str, Any]:
    failures = t.failures
    low, high = failures.interval(z)
    return {
        "answers": t.answers,
        "calls": t.calls,
        "failed": t.failed,
        "calls_per_answer": rounded(t.per_answer(t.calls)),
        "failed_per_answer": rounded(t.per_answer(t.failed)),
        "calling": t.calling,
        "failing": t.failing,
        "failing_rate": rounded(failures.rate),
        "failing_low": rounded(low) if t.calling else None,
        "failing_high": rounded(high) if t.calling else None,
    }


def tools_fail(loaded: ToolTally, without: ToolTally, thresholds: EffectThresholds) -> bool:
    """Whether answers with the skill fail tools more often than without it (see above).

    The rule that finds a harmful skill, with the arms' roles swapped: the rate compared is
    of failures, so "worse" is the higher one.
    """
    worse, base = loaded.failures, without.failures
    verdict = decide(
        base,
        worse,
        difference_interval(base, worse, thresholds.z),
        min_evidence=thresholds.min_evidence,
        margin=thresholds.margin,
        false_alarms=thresholds.alpha,
    )
    return verdict == "harmful"
