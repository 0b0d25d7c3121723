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
