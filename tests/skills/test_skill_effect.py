"""The statistics of skill effects: Wilson and Newcombe intervals, and the verdict rule."""

from __future__ import annotations

import pytest

from gateway.skills.effect import (
    EffectThresholds,
    SkillTallies,
    Tally,
    describe,
    difference_interval,
    harmful,
    judge,
    measure,
    take_look,
    wilson,
)

RULE = EffectThresholds(min_evidence=20, margin=0.15)


def tally(up: int, rated: int, answers: int | None = None) -> Tally:
    return Tally(answers=rated if answers is None else answers, up=up, down=rated - up)


@pytest.mark.parametrize(
    ("up", "rated", "low", "high"),
    [
        (5, 10, 0.2366, 0.7634),  # the textbook case: symmetric around one half
        (0, 10, 0.0, 0.2775),  # no 👍 at all still leaves room above zero
        (10, 10, 0.7225, 1.0),
        (81, 263, 0.2553, 0.3662),
    ],
)
def test_wilson_interval_matches_published_values(
    up: int, rated: int, low: float, high: float
) -> None:
    got = wilson(up, rated)
    assert got == pytest.approx((low, high), abs=1e-4)


def test_nothing_rated_means_nothing_is_known() -> None:
    assert wilson(0, 0) == (0.0, 1.0)
    assert Tally().rate is None and difference_interval(Tally(), tally(3, 4)) is None


def test_newcombe_difference_interval_matches_the_paper() -> None:
    # Newcombe (1998), method 10: 56/70 against 48/80 gives 0.2 with (0.0524, 0.3339).
    low, high = difference_interval(tally(56, 70), tally(48, 80)) or (0, 0)
    assert (low, high) == pytest.approx((0.0524, 0.3339), abs=1e-4)


def test_below_the_minimum_evidence_the_verdict_waits_however_stark_the_figures() -> None:
    assert judge(tally(0, 19), tally(100, 100), RULE) == "collecting"
    assert judge(tally(0, 100), tally(19, 19), RULE) == "collecting"


def test_reliably_worse_by_more_than_the_margin_is_harmful() -> None:
    assert judge(tally(4, 20), tally(15, 20), RULE) == "harmful"
    assert judge(tally(15, 20), tally(4, 20), RULE) == "helpful"


def test_a_big_gap_that_chance_explains_is_not_harmful() -> None:
    # 50% against 70% on 20 each: past the margin, but the interval of the gap spans zero.
    assert judge(tally(10, 20), tally(14, 20), RULE) == "unclear"


def test_a_real_but_small_gap_below_the_margin_is_not_harmful() -> None:
    # 70% against 75% on 2000 each: certainly worse, but by less than the margin.
    assert judge(tally(1400, 2000), tally(1500, 2000), RULE) == "unclear"
    assert judge(tally(1400, 2000), tally(1500, 2000), EffectThresholds(margin=0.04)) == "harmful"


def test_the_comparison_pools_offered_only_and_withheld_answers() -> None:
    measured = measure(
        SkillTallies(
            name="kitchen-tips",
            content_hash="h",
            loaded=tally(5, 20, answers=31),
            offered=tally(9, 12, answers=15),
            withheld=tally(7, 9),
        ),
        RULE,
    )
    # The figures are known at once; the verdict waits for the look they have come to.
    assert measured.verdict == "unclear" and measured.looked == -1
    effect = take_look(measured, RULE)
    assert effect is not None and effect.new_look and effect.looked >= 0
    assert take_look(effect, RULE) is None  # the same look is not taken twice
    assert (effect.without.up, effect.without.rated) == (16, 21)
    assert effect.difference == pytest.approx(5 / 20 - 16 / 21)
    assert effect.verdict == "harmful" and harmful(effect)
    figures = effect.summary()
    assert figures["uses"] == 31 and (figures["up"], figures["down"]) == (5, 15)
    assert figures["rate"] == 0.25 and figures["low"] == pytest.approx(0.1119, abs=1e-4)
    assert figures["offered_only"]["answers"] == 15 and figures["withheld"]["rated"] == 9
    assert figures["without"]["rate"] == pytest.approx(0.7619, abs=1e-4)
    assert figures["verdict"] == "harmful" and figures["look"] == effect.looked + 1 > 0
    line = describe(effect)
    assert line.startswith("31 uses, 👍 5 👎 15, rate 25% (11-47%)")
    assert "without it 76% of 21" in line and line.endswith(
        "harmful: rated worse than answers without it"
    )


def test_a_skill_never_rated_is_described_as_collecting_evidence() -> None:
    effect = measure(SkillTallies(name="x", content_hash="h"), RULE)
    assert effect.verdict == "collecting" and effect.summary()["rate"] is None
    assert effect.summary()["look"] == 0
    assert describe(effect) == "0 uses, 👍 0 👎 0, rate -; without it - of 0; collecting evidence"
