"""Each skill's effect on ratings: tallies, Wilson intervals and a verdict.

Attribution, for the skill's current text (answers made since its content last
changed), counting each rated answer once:

- *loaded*: answers whose trace loaded the skill (its uses);
- *offered only*: answers that had it in the skill index but did not load it;
- *withheld*: answers from whose turn the holdout removed it (it would have been offered);
- *without it*: the comparable answers, offered only plus withheld, i.e. rated answers
  for which the skill was eligible but not loaded.

An answer's rating is the majority of its raters (one rater in a private chat);
an answer with as many 👍 as 👎 counts as unrated. A thumbs-up rate comes with a
Wilson score interval, the difference of two rates with Newcombe's interval built
from them (both shown to people).

The verdict is a sequential test, because it is looked at after every pass: a
one-sided mixture sequential probability ratio test (mSPRT, Johari et al. 2017,
"Peeking at A/B tests") of the difference of the two rates, normal approximation,
half-normal mixture of scale `tau`, rates smoothed by one 👍 and one 👎 for the
variance. Its likelihood ratio may be checked after every answer and still says
"harmful" for a skill that does no harm with probability at most `alpha`, however
long the looking goes on. A skill is *harmful* when both samples hold at least the
minimum evidence, its rate is below the without-it rate by at least the margin,
and the ratio against "no harm" has reached 1/alpha: worse by an amount that
matters and by more than chance explains. *Helpful* is the mirror image.
*Unclear* is neither with the minimum evidence; the holdout keeps collecting until
both samples hold `settle_factor` times the minimum.

Tool calls are counted per arm over every answer, rated or not (a failure needs no
rating): calls and failed calls (an error, a timeout, the server down) per answer, and
among the answers that called a tool, the share with a failed call. A skill *fails
tools* when that share is higher with it than without it, by the same rules as
*harmful*: both samples hold the minimum evidence (answers that called a tool), the
difference reaches the margin, and the same sequential test has reached 1/alpha. It is
a flag on the skill's page; the verdict on ratings is unchanged by it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pydantic import BaseModel

from gateway.i18n import ENGLISH, N_, Np_, Texts

Z95 = 1.959963984540054
Verdict = Literal["collecting", "harmful", "helpful", "unclear"]
VERDICT_TEXT: dict[str, str] = {
    "collecting": N_("collecting evidence"),
    "harmful": N_("harmful: rated worse than answers without it"),
    "helpful": N_("helpful: rated better than answers without it"),
    "unclear": N_("no clear effect"),
}
FIGURES = Np_(
    "{n} use, 👍 {up} 👎 {down}, rate {rate}; without it {without} of {rated}; {verdict}",
    "{n} uses, 👍 {up} 👎 {down}, rate {rate}; without it {without} of {rated}; {verdict}",
)


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
    z: float = Z95
    """For the intervals shown to people."""
    alpha: float = 0.05
    """The sequential test's error bound: a harmless skill is called harmful at most this often."""
    tau: float = 0.5
    """The scale of differences the sequential test is tuned to find (its mixture)."""
    settle_factor: int = 10
    """An unclear skill is measured until both samples hold this many times the minimum."""


def log_evidence(worse: Tally, better: Tally, tau: float) -> float:
    """Log of the one-sided mSPRT ratio for "rate(better) exceeds rate(worse)" (see above)."""
    p1 = (worse.up + 1) / (worse.rated + 2)
    p2 = (better.up + 1) / (better.rated + 2)
    d = p2 - p1
    v = p1 * (1 - p1) / (worse.rated + 2) + p2 * (1 - p2) / (better.rated + 2)
    t2 = tau * tau
    spread = math.sqrt(v * (v + t2))
    tail = 0.5 * math.erfc(-(d * tau / spread) / math.sqrt(2))  # the normal CDF at d*tau/spread
    return (
        math.log(2)
        + 0.5 * math.log(v / (v + t2))
        + t2 * d * d / (2 * v * (v + t2))
        + math.log(max(tail, 1e-300))
    )


class ToolTally(BaseModel):
    """The tool calls of the answers in one arm, rated or not."""

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


class SkillTallies(BaseModel):
    """The raw counts of one skill's current text, as the store gathers them."""

    name: str
    content_hash: str
    since: float | None = None
    loaded: Tally = Tally()
    offered: Tally = Tally()
    withheld: Tally = Tally()
    tools_loaded: ToolTally = ToolTally()
    tools_offered: ToolTally = ToolTally()
    tools_withheld: ToolTally = ToolTally()


class SkillEffect(SkillTallies):
    """A skill's tallies with the comparison, the difference and the verdict."""

    difference: float | None = None
    difference_low: float | None = None
    difference_high: float | None = None
    verdict: Verdict = "collecting"
    z: float = Z95
    tool_difference: float | None = None
    """Share of tool-calling answers with a failed call, with it minus without it."""
    tool_difference_low: float | None = None
    tool_difference_high: float | None = None
    fails_tools: bool = False

    @property
    def without(self) -> Tally:
        """Comparable answers without the skill: offered but not loaded, or withheld."""
        return self.offered + self.withheld

    @property
    def tools_without(self) -> ToolTally:
        return self.tools_offered + self.tools_withheld

    def summary(self) -> dict[str, Any]:
        """The figures as plain JSON values (rates and bounds rounded to 4 places)."""
        return {
            "uses": self.loaded.answers,
            "up": self.loaded.up,
            "down": self.loaded.down,
            **_rate_fields(self.loaded, self.z),
            "offered_only": _arm(self.offered, self.z),
            "withheld": _arm(self.withheld, self.z),
            "without": _arm(self.without, self.z),
            "difference": _round(self.difference),
            "difference_low": _round(self.difference_low),
            "difference_high": _round(self.difference_high),
            "verdict": self.verdict,
            "tools": {
                "loaded": _tool_arm(self.tools_loaded, self.z),
                "without": _tool_arm(self.tools_without, self.z),
                "difference": _round(self.tool_difference),
                "difference_low": _round(self.tool_difference_low),
                "difference_high": _round(self.tool_difference_high),
                "fails_tools": self.fails_tools,
            },
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _rate_fields(t: Tally, z: float) -> dict[str, Any]:
    low, high = t.interval(z)
    return {
        "rated": t.rated,
        "rate": _round(t.rate),
        "low": _round(low) if t.rated else None,
        "high": _round(high) if t.rated else None,
    }


def _arm(t: Tally, z: float) -> dict[str, Any]:
    return {"answers": t.answers, "up": t.up, "down": t.down, **_rate_fields(t, z)}


def _tool_arm(t: ToolTally, z: float) -> dict[str, Any]:
    failures = t.failures
    low, high = failures.interval(z)
    return {
        "answers": t.answers,
        "calls": t.calls,
        "failed": t.failed,
        "calls_per_answer": _round(t.per_answer(t.calls)),
        "failed_per_answer": _round(t.per_answer(t.failed)),
        "calling": t.calling,
        "failing": t.failing,
        "failing_rate": _round(failures.rate),
        "failing_low": _round(low) if t.calling else None,
        "failing_high": _round(high) if t.calling else None,
    }


def tools_fail(loaded: ToolTally, without: ToolTally, thresholds: EffectThresholds) -> bool:
    """Whether answers with the skill fail tools more often than without it (see above)."""
    worse, base = loaded.failures, without.failures
    if min(worse.rated, base.rated) < thresholds.min_evidence:
        return False
    assert worse.rate is not None and base.rate is not None
    if worse.rate - base.rate < thresholds.margin:
        return False
    # The test's "better" arm is the one with the higher rate of `up`: here, of failures.
    return log_evidence(base, worse, thresholds.tau) >= math.log(1 / thresholds.alpha)


def judge(loaded: Tally, without: Tally, thresholds: EffectThresholds) -> Verdict:
    """The verdict on a skill from its loaded and without-it tallies."""
    if min(loaded.rated, without.rated) < thresholds.min_evidence:
        return "collecting"
    assert loaded.rate is not None and without.rate is not None
    d = loaded.rate - without.rate
    needed = math.log(1 / thresholds.alpha)
    if d <= -thresholds.margin and log_evidence(loaded, without, thresholds.tau) >= needed:
        return "harmful"
    if d >= thresholds.margin and log_evidence(without, loaded, thresholds.tau) >= needed:
        return "helpful"
    return "unclear"


def measure(tallies: SkillTallies, thresholds: EffectThresholds) -> SkillEffect:
    """The effect of one skill: its tallies judged against the thresholds."""
    without = tallies.offered + tallies.withheld
    interval = difference_interval(tallies.loaded, without, thresholds.z)
    difference = None
    if tallies.loaded.rate is not None and without.rate is not None:
        difference = tallies.loaded.rate - without.rate
    tools_without = tallies.tools_offered + tallies.tools_withheld
    failing, failing_without = tallies.tools_loaded.failures, tools_without.failures
    tool_interval = difference_interval(failing, failing_without, thresholds.z)
    tool_difference = None
    if failing.rate is not None and failing_without.rate is not None:
        tool_difference = failing.rate - failing_without.rate
    return SkillEffect(
        **tallies.model_dump(),
        difference=difference,
        difference_low=interval[0] if interval else None,
        difference_high=interval[1] if interval else None,
        verdict=judge(tallies.loaded, without, thresholds),
        z=thresholds.z,
        tool_difference=tool_difference,
        tool_difference_low=tool_interval[0] if tool_interval else None,
        tool_difference_high=tool_interval[1] if tool_interval else None,
        fails_tools=tools_fail(tallies.tools_loaded, tools_without, thresholds),
    )


def harmful(effect: SkillEffect) -> bool:
    """True when the skill is reliably rated worse than comparable answers without it."""
    return effect.verdict == "harmful"


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{round(value * 100)}%"


def describe(effect: SkillEffect, texts: Texts = ENGLISH) -> str:
    """One line for chat or a terminal: uses, 👍/👎, rate with interval, without-it, verdict."""
    t, w = effect.loaded, effect.without
    low, high = t.interval(effect.z)
    rate = f"{_percent(t.rate)} ({round(low * 100)}-{_percent(high)})" if t.rated else "-"
    return texts.plural(
        FIGURES,
        t.answers,
        up=t.up,
        down=t.down,
        rate=rate,
        without=_percent(w.rate),
        rated=w.rated,
        verdict=texts(VERDICT_TEXT[effect.verdict]),
    )


class EffectStore(Protocol):
    """The part of the store that counts rated answers per skill."""

    async def skill_tallies(self) -> dict[str, SkillTallies]: ...


async def skill_effects(store: EffectStore, thresholds: EffectThresholds) -> dict[str, SkillEffect]:
    """Every registered skill's effect on ratings, by name."""
    return {name: measure(t, thresholds) for name, t in (await store.skill_tallies()).items()}


def _settles(verdict: Verdict, loaded: Tally, without: Tally, th: EffectThresholds) -> bool:
    if verdict in ("harmful", "helpful"):
        return True
    enough = th.min_evidence * th.settle_factor
    return verdict == "unclear" and min(loaded.rated, without.rated) >= enough


def _lags(loaded: Tally, without: Tally, th: EffectThresholds) -> bool:
    return without.rated < max(th.min_evidence, loaded.rated)


def is_settled(effect: SkillEffect, thresholds: EffectThresholds) -> bool:
    """A verdict, or no clear effect with ample evidence on both sides: holdout may end."""
    return _settles(effect.verdict, effect.loaded, effect.without, thresholds)


def settled(effects: Mapping[str, SkillEffect], thresholds: EffectThresholds) -> dict[str, str]:
    """Skills whose current text needs no more holdout: name -> content hash."""
    return {n: e.content_hash for n, e in effects.items() if is_settled(e, thresholds)}


def short_of_comparison(
    effects: Mapping[str, SkillEffect], thresholds: EffectThresholds
) -> set[str]:
    """Unsettled skills whose comparison lags: fewer rated answers without them than with them.

    A skill loaded on (nearly) every answer has no comparison but what the holdout withholds,
    so these are withheld more often (`SKILLGATE_SKILL_HOLDOUT_START`) until it catches up.
    """
    return {
        n
        for n, e in effects.items()
        if not is_settled(e, thresholds) and _lags(e.loaded, e.without, thresholds)
    }


async def holdout_state(
    store: EffectStore, thresholds: EffectThresholds
) -> tuple[dict[str, str], set[str]]:
    """`settled` and `short_of_comparison` of every skill, without measuring each in full
    (no intervals: only the verdict and the counts matter here)."""
    done: dict[str, str] = {}
    lagging: set[str] = set()
    for name, t in (await store.skill_tallies()).items():
        without = t.offered + t.withheld
        if _settles(judge(t.loaded, without, thresholds), t.loaded, without, thresholds):
            done[name] = t.content_hash
        elif _lags(t.loaded, without, thresholds):
            lagging.add(name)
    return done, lagging
