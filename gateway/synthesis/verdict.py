"""What a proposal's trial measured, as one verdict a reviewer can read at a glance.

A trial answers real rated turns again twice: once with the proposal in place (`with_it`)
and once without it (`control`), and a judge compares each new answer with the answer the
user rated. Two sides are tried:

- `fixes`: the 👎-rated turns the proposal was drawn from (what it claims to fix);
- `guards`: rated turns it was not drawn from on which the live prompt would offer it (what
  it might break); `liked` is the 👍-rated part of them.

The control arm measures the judge's own noise: a proposal shows a *measured gain* only when
it beats the control on what it claims to fix and is not worse than the control on what it
might break. It shows *regressions* when, on answers users liked, it makes more answers
worse than the control does. This module holds the rule alone, so the trial, the cards and
the evaluation's simulated trial read one definition.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

__all__ = ["Arm", "Side", "Verdict", "decide"]


class Verdict(StrEnum):
    MEASURED_GAIN = "measured_gain"
    NO_MEASURED_GAIN = "no_measured_gain"
    REGRESSIONS = "regressions"
    NOT_MEASURED = "not_measured"


@dataclass(frozen=True)
class Arm:
    """The judge's verdicts on one arm: each new answer better, same or worse than the rated one."""

    better: int = 0
    same: int = 0
    worse: int = 0

    @property
    def tried(self) -> int:
        return self.better + self.same + self.worse

    @property
    def net(self) -> int:
        return self.better - self.worse


@dataclass(frozen=True)
class Side:
    """One side of a trial: the same turns answered with the proposal and without it."""

    with_it: Arm = field(default_factory=Arm)
    control: Arm = field(default_factory=Arm)

    @property
    def tried(self) -> int:
        return max(self.with_it.tried, self.control.tried)


def decide(fixes: Side, guards: Side, liked: Side) -> Verdict:
    """The trial's verdict from its counts (`liked` is the 👍 part of `guards`).

    Nothing judged on either side is `NOT_MEASURED`; the caller says why.
    """
    if fixes.tried == 0 and guards.tried == 0:
        return Verdict.NOT_MEASURED
    if liked.with_it.worse > liked.control.worse:
        return Verdict.REGRESSIONS
    gains = fixes.tried > 0 and fixes.with_it.net > fixes.control.net
    holds = guards.with_it.net >= guards.control.net
    return Verdict.MEASURED_GAIN if gains and holds else Verdict.NO_MEASURED_GAIN
