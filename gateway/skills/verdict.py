"""A sequential test that may be looked at after every count: the flag on failing tools.

The ratings' verdict is taken at recorded looks instead (`gateway/skills/looks.py`, which
needs fewer ratings because each look is taken once); the tool-failure flag, a figure on
the skill's page and no retirement, keeps this always-valid test. The question is whether
one share is lower than another (answers that loaded a skill rated 👍, against the
comparable answers without it). It is asked again after every synthesis pass, so a
fixed-sample test (an interval that excludes zero) would raise a false alarm with every
look. The test here is a one-sided mixture sequential probability ratio test (mSPRT,
Johari, Pekelis and Walsh 2017, "Always valid inference", the normal approximation of the
difference of two rates, each smoothed by one 👍 and one 👎): its likelihood ratio against
"no harm" may be checked after every rating and still reaches `1/false_alarms` for a skill
that does no harm with probability at most `false_alarms`, however long the looking goes on
(exactly so for normal data; for ratings, measured at 5%: 1.3 to 5.0% of neutral runs).

Its mixture over harms is a half-normal whose scale is the margin, the smallest difference
worth flagging: a test tuned to that size reaches a verdict on milder ones sooner than one
spread over large ones.

`decide` calls one side *harmful* (for tools: fails them) when both samples hold the
minimum evidence, the ratio has reached `1/false_alarms`, and a difference of the margin's
size is within the difference's 95% interval. *Helpful* is the mirror image. For both
rules, *unclear* is neither; a skill's ratings settle (the holdout may end) once both samples
hold `settle_factor` times the minimum and the interval lies within the margin both ways,
so a mild harm that has not yet shown itself keeps being measured.
"""

from __future__ import annotations

import math
from typing import Literal, Protocol

Verdict = Literal["collecting", "harmful", "helpful", "unclear"]


class Counts(Protocol):
    """The ratings of one arm: how many were 👍, out of how many rated."""

    @property
    def up(self) -> int: ...

    @property
    def rated(self) -> int: ...


def log_evidence(worse: Counts, better: Counts, scale: float) -> float:
    """Log of the one-sided mSPRT ratio for "rate(better) exceeds rate(worse)"."""
    p1 = (worse.up + 1) / (worse.rated + 2)
    p2 = (better.up + 1) / (better.rated + 2)
    d = p2 - p1
    v = p1 * (1 - p1) / (worse.rated + 2) + p2 * (1 - p2) / (better.rated + 2)
    t2 = scale * scale
    spread = math.sqrt(v * (v + t2))
    tail = 0.5 * math.erfc(-(d * scale / spread) / math.sqrt(2))  # the normal CDF at d*scale/spread
    return (
        math.log(2)
        + 0.5 * math.log(v / (v + t2))
        + t2 * d * d / (2 * v * (v + t2))
        + math.log(max(tail, 1e-300))
    )


def decide(
    loaded: Counts,
    without: Counts,
    interval: tuple[float, float] | None,
    *,
    min_evidence: int,
    margin: float,
    false_alarms: float,
) -> Verdict:
    """The verdict from both arms' counts and the 95% interval of rate(loaded) - rate(without)."""
    if min(loaded.rated, without.rated) < min_evidence or interval is None:
        return "collecting"
    needed = math.log(1 / false_alarms)
    low, high = interval
    if low <= -margin and log_evidence(loaded, without, margin) >= needed:
        return "harmful"
    if high >= margin and log_evidence(without, loaded, margin) >= needed:
        return "helpful"
    return "unclear"


def settles(
    verdict: Verdict,
    loaded: Counts,
    without: Counts,
    interval: tuple[float, float] | None,
    *,
    enough: int,
    margin: float,
) -> bool:
    """A verdict, or no clear effect on `enough` ratings a side with the margin ruled out."""
    if verdict in ("harmful", "helpful"):
        return True
    if verdict != "unclear" or interval is None or min(loaded.rated, without.rated) < enough:
        return False
    return -margin < interval[0] and interval[1] < margin
