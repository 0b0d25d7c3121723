"""`python -m eval.retirement`: the seeded simulation of retirement verdicts and its table."""

from __future__ import annotations

import math

import pytest

from eval.retirement import HARMS, SHARES, main, percentile, render, simulate


def test_the_report_has_every_harm_at_every_share_and_the_false_alarms(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rows = simulate(seeds=6, horizon=80)
    harms = [(r.p_with, r.rated_share) for r in rows if r.p_with != r.p_without]
    assert harms == [(p, share) for share in SHARES for p in HARMS]
    neutral = [r for r in rows if r.p_with == r.p_without]
    assert [r.rated_share for r in neutral] == list(SHARES)
    for r in rows:
        assert r.runs == 6 and 0 <= r.retired <= 6
        assert r.rated[0] <= r.rated[1] and r.answers[0] >= r.rated[0]
    # Stark harm is always caught within the horizon; a fifth rated takes more traffic.
    stark = {r.rated_share: r for r in rows if r.p_with == 0.10}
    assert stark[0.85].retired == stark[0.20].retired == 6
    assert stark[0.20].answers[0] > 2 * stark[0.85].answers[0]

    text = render(rows, 80)
    lines = text.splitlines()
    assert lines[0].startswith("| 👍 with it / without | rated | retired | rated answers: median")
    assert sum(line.startswith("| ") for line in lines) == 2 + len(harms)
    assert text.count("False alarms, a neutral skill (75% / 75%") == 2
    assert "| 10% / 75% | 85% | 6 of 6 |" in text

    # The same seeds give the same table: the command is reproducible.
    main(["--seeds", "6", "--horizon", "80"])
    assert capsys.readouterr().out.startswith(text)


def test_a_run_with_no_verdict_counts_past_the_horizon() -> None:
    assert percentile([3.0, 1.0, 2.0, math.inf], 0.5) == 2.0
    assert percentile([3.0, 1.0, 2.0, math.inf], 0.9) == math.inf
    assert "> 80 rated" in render(simulate(seeds=2, horizon=80, harms=(0.6,)), 80)
