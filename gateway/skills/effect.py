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

The verdict is a group-sequential test: `measure` reads the verdict a recorded look
reached, and `take_looks` takes the looks that have come due, which the caller records
(see `gateway/skills/looks.py` for the rule and why it keeps false alarms under its bound
however often the skill is measured).

The statistics themselves are in `rates`; the tool calls of each arm, and the flag for a
skill that fails tools more often, in `tool_effect`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from pydantic import BaseModel

from gateway.i18n import ENGLISH, N_, Np_, Texts
from gateway.skills.looks import at_look, look_due
from gateway.skills.rates import NO_ANSWERS

# Re-exported: callers name the measurement's parts from this module.
from gateway.skills.rates import Z95 as Z95
from gateway.skills.rates import EffectThresholds as EffectThresholds
from gateway.skills.rates import Tally as Tally
from gateway.skills.rates import difference_interval as difference_interval
from gateway.skills.rates import rounded as _round
from gateway.skills.rates import wilson as wilson
from gateway.skills.tool_effect import NO_CALLS, tool_figures
from gateway.skills.tool_effect import ToolTally as ToolTally
from gateway.skills.tool_effect import tools_fail as tools_fail
from gateway.skills.verdict import Verdict, settles

Interval = tuple[float, float] | None
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


class SkillTallies(BaseModel):
    """The raw counts of one skill's current text, as the store gathers them."""

    name: str
    content_hash: str
    since: float | None = None
    # One frozen instance for every default: a start with a large library makes one of
    # these per skill, and a copy or a factory per field was most of its cost.
    loaded: Tally = NO_ANSWERS
    offered: Tally = NO_ANSWERS
    withheld: Tally = NO_ANSWERS
    tools_loaded: ToolTally = NO_CALLS
    tools_offered: ToolTally = NO_CALLS
    tools_withheld: ToolTally = NO_CALLS
    looked: int = -1
    """The last look the test took at this text (-1: none yet)."""
    reached: Verdict | None = None
    """The verdict a look reached on this text, harmful or helpful; it stands."""


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
    new_look: bool = False
    """A look was taken by this measurement: record it before acting on it."""

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
            "look": self.looked + 1,
            "tools": {
                "loaded": tool_figures(self.tools_loaded, self.z),
                "without": tool_figures(self.tools_without, self.z),
                "difference": _round(self.tool_difference),
                "difference_low": _round(self.tool_difference_low),
                "difference_high": _round(self.tool_difference_high),
                "fails_tools": self.fails_tools,
            },
        }


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
    """The verdict of the look these tallies have reached, on a skill never looked at."""
    effect = measure(
        SkillTallies(name="", content_hash="", loaded=loaded, offered=without), thresholds
    )
    return (take_look(effect, thresholds) or effect).verdict


def _verdict(
    loaded: Tally, without: Tally, interval: Interval, th: EffectThresholds, reached: Verdict | None
) -> Verdict:
    """The verdict a recorded look reached, else whether there is enough to look at."""
    if reached is not None:
        return reached
    if min(loaded.rated, without.rated) < th.min_evidence or interval is None:
        return "collecting"
    return "unclear"


def take_look(effect: SkillEffect, thresholds: EffectThresholds) -> SkillEffect | None:
    """The effect after the look its tallies have come to, or None when none is due."""
    th, loaded, without = thresholds, effect.loaded, effect.without
    due = look_due(
        loaded, without, min_evidence=th.min_evidence, margin=th.margin, false_alarms=th.alpha
    )
    low, high = effect.difference_low, effect.difference_high
    if effect.reached is not None or due <= effect.looked or low is None or high is None:
        return None
    verdict = at_look(due, loaded, without, (low, high), margin=th.margin, false_alarms=th.alpha)
    reached = verdict if verdict in ("harmful", "helpful") else None
    return effect.model_copy(
        update={
            "looked": due,
            "reached": reached,
            "verdict": reached or effect.verdict,
            "new_look": True,
        }
    )


def take_looks(
    effects: Mapping[str, SkillEffect], thresholds: EffectThresholds
) -> dict[str, SkillEffect]:
    """Every effect after the look it has come to; those with `new_look` are to be recorded."""
    return {n: take_look(e, thresholds) or e for n, e in effects.items()}


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
        verdict=_verdict(tallies.loaded, without, interval, thresholds, tallies.reached),
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
    # Most skills of a large library share their counts (none yet): each outcome once.
    outcomes: dict[tuple[object, ...], tuple[bool, bool]] = {}
    for name, t in (await store.skill_tallies()).items():
        key = (*_counts(t.loaded), *_counts(t.offered), *_counts(t.withheld), t.reached)
        outcome = outcomes.get(key)
        if outcome is None:
            without = t.offered + t.withheld
            outcome = outcomes[key] = _holdout(t.loaded, without, thresholds, t.reached)
        if outcome[0]:
            done[name] = t.content_hash
        elif outcome[1]:
            lagging.add(name)
    return done, lagging


def _counts(t: Tally) -> tuple[int, int, int]:
    return t.answers, t.up, t.down


def _holdout(
    loaded: Tally, without: Tally, th: EffectThresholds, reached: Verdict | None
) -> tuple[bool, bool]:
    """Whether a skill with these counts is settled, and whether its comparison lags."""
    interval = difference_interval(loaded, without, th.z)
    verdict = _verdict(loaded, without, interval, th, reached)
    if _settles(verdict, loaded, without, interval, th):
        return True, False
    return False, _lags(loaded, without, th)
