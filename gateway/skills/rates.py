"""The statistics the effect measurement uses: Wilson and Newcombe intervals of thumbs-up
rates, and the tallies they are taken from (the tests themselves: `looks`, `verdict`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

Z95 = 1.959963984540054


def wilson(up: int, rated: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a thumbs-up rate; (0, 1) when nothing was rated."""
    if rated <= 0:
        return 0.0, 1.0
    p = up / rated
    z2 = z * z
    centre = (p + z2 / (2 * rated)) / (1 + z2 / rated)
    half = z * math.sqrt(p * (1 - p) / rated + z2 / (4 * rated * rated)) / (1 + z2 / rated)
    return max(0.0, centre - half), min(1.0, centre + half)


class Tally(BaseModel):
    """Answers in one arm, and how many of them were rated 👍 and 👎.

    `answers` counts every answer for the loaded arm (the skill's uses), and the answers
    someone rated for the comparison arms.
    """

    model_config = ConfigDict(frozen=True)

    answers: int = 0
    up: int = 0
    down: int = 0

    @property
    def rated(self) -> int:
        return self.up + self.down

    @property
    def rate(self) -> float | None:
        return self.up / self.rated if self.rated else None

    def interval(self, z: float = Z95) -> tuple[float, float]:
        return wilson(self.up, self.rated, z)

    def __add__(self, other: Tally) -> Tally:
        return Tally(
            answers=self.answers + other.answers, up=self.up + other.up, down=self.down + other.down
        )


NO_ANSWERS = Tally()
"""The tally of an arm nothing was counted in (frozen: one instance serves every default)."""


def difference_interval(a: Tally, b: Tally, z: float = Z95) -> tuple[float, float] | None:
    """Newcombe's hybrid score interval of rate(a) - rate(b); None unless both were rated."""
    if a.rate is None or b.rate is None:
        return None
    (la, ua), (lb, ub) = a.interval(z), b.interval(z)
    d = a.rate - b.rate
    return (
        d - math.sqrt((a.rate - la) ** 2 + (ub - b.rate) ** 2),
        d + math.sqrt((ua - a.rate) ** 2 + (b.rate - lb) ** 2),
    )


@dataclass(frozen=True)
class EffectThresholds:
    """When a skill's figures are enough to judge it, and by how much it must differ."""

    min_evidence: int = 5
    margin: float = 0.15
    """The smallest harm worth retiring for: the sequential test is tuned to it."""
    z: float = Z95
    """For the intervals shown to people."""
    alpha: float = 0.05
    """The test's error bound, shared out over its looks: a harmless skill is called harmful
    at most this often."""
    settle_factor: int = 10
    """An unclear skill is measured until both samples hold this many times the minimum (and
    its difference's interval lies within the margin)."""


def rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
