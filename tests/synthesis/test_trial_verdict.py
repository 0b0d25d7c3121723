"""The trial's verdict rule: a gain is measured against the control arm, never assumed."""

from __future__ import annotations

import pytest

from gateway.synthesis.verdict import Arm, Side, Verdict, decide

NOTHING = Side()


def side(with_it: tuple[int, int, int], control: tuple[int, int, int]) -> Side:
    return Side(Arm(*with_it), Arm(*control))


def test_nothing_judged_is_not_measured() -> None:
    assert decide(NOTHING, NOTHING, NOTHING) is Verdict.NOT_MEASURED


def test_a_proposal_that_beats_the_control_and_breaks_nothing_shows_a_gain() -> None:
    fixes = side((4, 1, 1), (1, 4, 1))
    guards = side((1, 5, 0), (1, 5, 0))
    assert decide(fixes, guards, side((0, 3, 0), (0, 3, 0))) is Verdict.MEASURED_GAIN


def test_better_answers_that_the_control_also_gets_are_the_judges_noise() -> None:
    fixes = side((4, 2, 0), (4, 2, 0))
    assert decide(fixes, NOTHING, NOTHING) is Verdict.NO_MEASURED_GAIN


def test_worse_on_liked_answers_than_the_control_is_a_regression_whatever_it_fixes() -> None:
    fixes = side((6, 0, 0), (0, 6, 0))
    liked = side((0, 2, 1), (0, 3, 0))
    assert decide(fixes, liked, liked) is Verdict.REGRESSIONS


@pytest.mark.parametrize(
    ("guards", "expected"),
    [
        (side((0, 4, 2), (0, 6, 0)), Verdict.NO_MEASURED_GAIN),
        (side((0, 6, 0), (0, 6, 0)), Verdict.MEASURED_GAIN),
    ],
)
def test_a_gain_must_not_cost_the_answers_it_might_break(guards: Side, expected: Verdict) -> None:
    fixes = side((3, 0, 0), (0, 3, 0))
    assert decide(fixes, guards, NOTHING) is expected


def test_with_only_turns_it_might_break_there_is_no_gain_to_show() -> None:
    assert decide(NOTHING, side((2, 2, 0), (0, 4, 0)), NOTHING) is Verdict.NO_MEASURED_GAIN
