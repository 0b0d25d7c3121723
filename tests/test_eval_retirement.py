"""`python -m eval.retirement`: the seeded simulation of retirement verdicts and its tables."""

from __future__ import annotations

import math

import pytest

from eval.retirement import HARMS, LOADED_SHARE, SHARES, main, percentile, render, simulate


@pytest.mark.parametrize("loaded_share", [1.0, LOADED_SHARE])
def test_the_report_has_every_harm_at_every_share_and_the_false_alarms(
    loaded_share: float,
) -> None:
    rows = simulate(seeds=6, horizon=80, loaded_share=loaded_share)
    harms = [(r.p_with, r.rated_share) for r in rows if r.p_with != r.p_without]
    assert harms == [(p, share) for share in SHARES for p in HARMS]
    neutral = [r for r in rows if r.p_with == r.p_without]
    assert [r.rated_share for r in neutral] == list(SHARES)
    for r in rows:
        assert r.runs == 6 and 0 <= r.retired <= 6 and r.loaded_share == loaded_share
        assert r.rated[0] <= r.rated[1] and r.answers[0] >= r.rated[0] >= r.uses[0]
    # Stark harm is always caught within the horizon; a fifth rated takes more traffic.
    stark = {r.rated_share: r for r in rows if r.p_with == 0.10}
    assert stark[0.85].retired == stark[0.20].retired == 6
    assert stark[0.20].answers[0] > 2 * stark[0.85].answers[0]

    text = render(rows, 80)
    lines = text.splitlines()
    assert lines[2].startswith("| 👍 with it / without | rated | retired | rated answers: median")
    assert "| its rated uses: median |" in lines[2]
    assert sum(line.startswith("| ") for line in lines) == 2 + len(harms)
    assert text.count("False alarms, a neutral skill (75% / 75%") == 2
    assert "| 10% / 75% | 85% | 6 of 6 |" in text


def test_a_skill_loaded_on_a_share_of_answers_has_fewer_uses_than_rated_answers() -> None:
    every, share = (
        simulate(seeds=6, horizon=80, harms=(0.1,), loaded_share=s)[0] for s in (1.0, LOADED_SHARE)
    )
    assert every.rated[0] - every.uses[0] < every.uses[0]  # the holdout withholds few
    assert share.rated[0] > 2 * share.uses[0]  # most comparable answers are offered only
    assert "loaded on every answer" in render([every], 80)
    assert f"loaded on {LOADED_SHARE:.0%} of the answers" in render([share], 80)


def test_the_same_seeds_give_the_same_tables(capsys: pytest.CaptureFixture[str]) -> None:
    main(["--seeds", "3", "--horizon", "40"])
    both = capsys.readouterr().out
    every = render(simulate(seeds=3, horizon=40), 40)
    share = render(simulate(seeds=3, horizon=40, loaded_share=LOADED_SHARE), 40)
    assert both.startswith(every + "\n" + share)
    main(["--seeds", "3", "--horizon", "40", "--case", "share"])
    assert capsys.readouterr().out.startswith(share)


def test_a_run_with_no_verdict_counts_past_the_horizon() -> None:
    assert percentile([3.0, 1.0, 2.0, math.inf], 0.5) == 2.0
    assert percentile([3.0, 1.0, 2.0, math.inf], 0.9) == math.inf
    assert "> 80 rated" in render(simulate(seeds=2, horizon=80, harms=(0.6,)), 80)
