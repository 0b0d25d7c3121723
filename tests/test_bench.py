"""The benchmarks: each command imports, explains itself, and rewrites only its own section."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from bench.report import table, write_section

COMMANDS = (
    "webhook",
    "skill_index",
    "memory",
    "synthesis",
    "streaming",
    "startup",
    "startup_profile",
    "trial",
)


@pytest.mark.parametrize("name", COMMANDS)
def test_every_benchmark_command_has_help(
    name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    module = importlib.import_module(f"bench.{name}")
    monkeypatch.setattr(sys, "argv", [f"bench.{name}", "--help"])
    with pytest.raises(SystemExit) as exit_info:
        module.main()
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "usage:" in out and "--write" in out


def test_writing_results_replaces_only_that_benchmarks_section(tmp_path: Path) -> None:
    doc = tmp_path / "BENCHMARKS.md"
    doc.write_text("# Benchmarks\n\nMethod.\n<!-- bench:memory -->\nold\n<!-- /bench:memory -->\n")
    write_section("memory", table(["a", "b"], [[1, 2]]), doc)
    write_section("webhook", "first run", doc)
    write_section("webhook", "second run", doc)
    text = doc.read_text()
    assert "Method." in text and "old" not in text and "| 1 | 2 |" in text
    assert "second run" in text and "first run" not in text
    assert text.count("<!-- bench:webhook -->") == 1


async def test_synthesis_calls_grow_with_new_evidence_not_with_the_window(tmp_path: Path) -> None:
    from bench.synthesis_days import PASSES_PER_DAY, simulate

    days = await simulate(6, 2, tmp_path)
    # Six hours of each day bring a session (most of them rated): at most one call each, and
    # none in the other 18, however many older sessions wait; the earlier rule asked at every
    # pass.
    assert all(0 < calls <= 6 for calls in days.calls), days.calls
    assert days.before_calls == [PASSES_PER_DAY, PASSES_PER_DAY]
    assert days.tokens[1] < days.before_tokens[1] / 2


async def test_a_judge_that_never_answers_costs_questions_bounded_by_the_backoff(
    tmp_path: Path,
) -> None:
    from bench.synthesis_held import simulate

    down = await simulate(3, tmp_path, "down")
    # One candidate a day, asked at most 4 times in all (next pass, 4 h, a day), however many
    # passes run; the earlier rule asked every held one at every pass.
    assert down.questions[0] <= 3 and sum(down.questions) <= 3 * 4, down.questions
    assert down.before[2] > 24 * 2
    garbled = await simulate(3, tmp_path, "garbled")
    assert sum(garbled.questions) == 0 and garbled.to_person == 3


async def test_a_trial_is_priced_in_exact_calls_and_tokens(tmp_path: Path) -> None:
    import argparse

    from bench.trial import render, run

    args = argparse.Namespace(proposals=1, turns=1, rounds=1, rate=20, model_latency=0.0)
    result = await run(args, tmp_path)
    priced = result.priced
    # One turn a side: the fix and one guard, each on both arms (4 pairs); with the proposal
    # the answer loads it first (2 calls), without it answers at once (1), each judged once.
    assert priced.trials == [
        {
            "name": "printer-spooler",
            "calls": 10,
            "pairs": 4,
            "fixes": 1,
            "guards": 1,
            "verdict": "measured_gain",
        }
    ]
    assert priced.kinds["trial answer"][0] == 6 and priced.kinds["trial comparison"][0] == 4
    assert priced.kinds["synthesis"][0] == 1 and priced.kinds["same-claim question"][0] == 1
    # What the gateway recorded for the pass is what the model reported.
    assert priced.recorded == {
        "prompt_tokens": sum(v[1] for v in priced.kinds.values()),
        "completion_tokens": sum(v[2] for v in priced.kinds.values()),
    }
    assert [t["pairs"] for t in result.loaded_trials] == [4]
    assert [(x.round, x.name, x.answered, x.sent) for x in result.loads] == [
        (1, "with a pass", 20, 20),
        (1, "no pass", 20, 20),
        (1, "bare", 20, 20),
    ]
    text = render(result, args)
    assert "| per pair" in text and "p99 over bare while a pass with trials runs" in text
