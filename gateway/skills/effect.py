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

The verdict is a sequential test, because it is looked at after every pass: see
`gateway/skills/verdict.py` for the rule and why it keeps false alarms under its bound
however often it is checked.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel

from gateway.i18n import ENGLISH, N_, Np_, Texts
from gateway.skills.verdict import Verdict, decide, settles

Z95 = 1.959963984540054
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


Interval = tuple[float, float] | None


def difference_interval(a: Tally, b: Tally, z: float = Z95) -> Interval:
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
    """The sequential test's error bound: a harmless skill is called harmful at most this often."""
    settle_factor: int = 10
    """An unclear skill is measured until both samples hold this many times the minimum (and
    its difference's interval lies within the margin)."""


class SkillTallies(BaseModel):
    """The raw counts of one skill's current text, as the store gathers them."""

    name: str
    content_hash: str
    since: float | None = None
    loaded: Tally = Tally()
    offered: Tally = Tally()
    withheld: Tally = Tally()


class SkillEffect(SkillTallies):
    """A skill's tallies with the comparison, the difference and the verdict."""

    difference: float | None = None
    difference_low: float | None = None
    difference_high: float | None = None
    verdict: Verdict = "collecting"
    z: float = Z95

    @property
    def without(self) -> Tally:
        """Comparable answers without the skill: offered but not loaded, or withheld."""
        return self.offered + self.withheld

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


def judge(loaded: Tally, without: Tally, thresholds: EffectThresholds) -> Verdict:
    """The verdict on a skill from its loaded and without-it tallies."""
    return _verdict(loaded, without, difference_interval(loaded, without, thresholds.z), thresholds)


def _verdict(loaded: Tally, without: Tally, interval: Interval, th: EffectThresholds) -> Verdict:
    return decide(
        loaded,
        without,
        interval,
        min_evidence=th.min_evidence,
        margin=th.margin,
        false_alarms=th.alpha,
    )


def measure(tallies: SkillTallies, thresholds: EffectThresholds) -> SkillEffect:
    """The effect of one skill: its tallies judged against the thresholds."""
    without = tallies.offered + tallies.withheld
    interval = difference_interval(tallies.loaded, without, thresholds.z)
    difference = None
    if tallies.loaded.rate is not None and without.rate is not None:
        difference = tallies.loaded.rate - without.rate
    return SkillEffect(
        **tallies.model_dump(),
        difference=difference,
        difference_low=interval[0] if interval else None,
        difference_high=interval[1] if interval else None,
        verdict=_verdict(tallies.loaded, without, interval, thresholds),
        z=thresholds.z,
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


def _settles(
    verdict: Verdict, loaded: Tally, without: Tally, interval: Interval, th: EffectThresholds
) -> bool:
    enough = th.min_evidence * th.settle_factor
    return settles(verdict, loaded, without, interval, enough=enough, margin=th.margin)


def _lags(loaded: Tally, without: Tally, th: EffectThresholds) -> bool:
    return without.rated < max(th.min_evidence, loaded.rated)


def is_settled(effect: SkillEffect, thresholds: EffectThresholds) -> bool:
    """A verdict, or no clear effect with ample evidence on both sides: holdout may end."""
    low, high = effect.difference_low, effect.difference_high
    interval = None if low is None or high is None else (low, high)
    return _settles(effect.verdict, effect.loaded, effect.without, interval, thresholds)


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
        interval = difference_interval(t.loaded, without, thresholds.z)
        verdict = _verdict(t.loaded, without, interval, thresholds)
        if _settles(verdict, t.loaded, without, interval, thresholds):
            done[name] = t.content_hash
        elif _lags(t.loaded, without, thresholds):
            lagging.add(name)
    return done, lagging
