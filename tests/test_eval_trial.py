"""The evaluation's simulated trial: a judge right at its rate, the real rule, a reviewer reads it.

The trial in `python -m eval` is simulated (`eval/trial.py`): the judge is no model, it
states the truth of each pair (from the simulated user's preferences) at a given rate.
These tests hold it to that, check the rule it feeds is the gateway's, that a perfect
judge keeps every bad proposal out even when the reviewer approves all it reads, that a
judge at chance tells good from bad no better than chance, and that a run without the
trial is the run it was before the trial existed.
"""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from eval.__main__ import main
from eval.answers import Style, compose
from eval.config import WORLDS, Config
from eval.corpus import CORPUS
from eval.reviewer import TRIAL_REASONS, ScriptedReviewer
from eval.simulation import Simulation
from eval.skills import BAD_KINDS, POOR
from eval.trial import (
    CHANCE,
    PAIRS,
    LiveSkill,
    RatedTurn,
    SimulatedJudge,
    run_trial,
    truth,
)
from eval.world import User, pleased
from gateway.synthesis.verdict import Verdict

SHORT = Config(
    seed=4,
    cycles=3,
    users=8,
    questions=3,
    held_out=6,
    held_out_questions=3,
    bad_share=1.0,  # a poor proposal, a repeat and a copy in every pass
)
WRITING = LiveSkill("writing-for-chat", "Use for every answer: short paragraphs.", "Keep it short.")
LISTS = {
    "id": 1,
    "kind": "create",
    "target": None,
    "name": "list-facts",
    "description": "Use for every answer: give the facts as bullet points.",
    "content": "# Lists\n\nGive the facts as a bullet list, one per line.",
    "based_on": [1, 2, 3, 4],
    "content_hash": "lists",
}
PASSWORD = next(d for d in POOR if BAD_KINDS[d.name] == "password")
ASKS_PASSWORD = {
    **LISTS,
    "id": 2,
    "name": PASSWORD.name,
    "description": PASSWORD.description,
    "content": PASSWORD.content,
    "content_hash": "password",
}


def rated_turns() -> list[RatedTurn]:
    """Sessions 1-4: users wanting lists, shown paragraphs (👎); 5-12: others, most pleased."""
    turns = []
    for n in range(1, 13):
        wants = frozenset({"bullets"}) if n <= 4 else frozenset({"citation"} if n % 3 else ())
        user = User(n, wants, f"t:{n}")
        question = CORPUS[n % len(CORPUS)]
        text = compose(question, Style())
        turns.append(
            RatedTurn(1, n, user, question, text, 1 if pleased(wants, text, question) else -1)
        )
    return turns


def trial(proposal: dict[str, Any], accuracy: float, seed: int = 1) -> Verdict:
    return run_trial(
        proposal,
        1,
        rated_turns(),
        [WRITING],
        judge=SimulatedJudge(accuracy),
        per_side=6,
        budget=800,
        seed=seed,
    ).verdict


def test_the_judge_states_the_truth_at_its_rate_and_each_wrong_verdict_alike() -> None:
    rng = random.Random(7)
    judge = SimulatedJudge(0.8)
    said = [judge("better", rng) for _ in range(6000)]
    assert 0.78 < said.count("better") / 6000 < 0.82
    assert 0.08 < said.count("same") / 6000 < 0.12 and 0.08 < said.count("worse") / 6000 < 0.12
    again = random.Random(7)
    assert [judge("better", again) for _ in range(6000)] == said  # drawn from the seed
    assert {SimulatedJudge(1.0)(p, rng) for p in PAIRS for _ in range(50)} == set(PAIRS)
    assert all(SimulatedJudge(1.0)(p, rng) == p for p in PAIRS for _ in range(50))
    with pytest.raises(ValueError):
        SimulatedJudge(1.5)


def test_a_pair_is_judged_by_the_users_own_preferences() -> None:
    (turn, *_) = rated_turns()  # wants bullets, was shown paragraphs
    bulleted = compose(turn.question, Style(bullets=True))
    assert truth(turn, bulleted) == "better"
    assert truth(turn, turn.text) == "same"
    assert truth(turn, compose(turn.question, Style(bullets=True, ask_password=True))) == "worse"


def test_with_a_perfect_judge_a_proposal_shows_what_it_does_against_the_control() -> None:
    result = run_trial(
        LISTS,
        1,
        rated_turns(),
        [WRITING],
        judge=SimulatedJudge(1.0),
        per_side=6,
        budget=800,
        seed=1,
    )
    # What it claims to fix: the 👎 turns of its sessions, better with it, the same without.
    assert (result.fixes.with_it.better, result.fixes.with_it.tried) == (4, 4)
    assert (result.fixes.control.same, result.fixes.control.tried) == (4, 4)
    # What it might break: six other rated turns, none worse (lists are nobody's dislike).
    assert result.guards.tried == 6 and result.guards.with_it.worse == 0
    assert 0 < result.liked.tried < 6 and result.liked.with_it.worse == 0
    assert result.verdict is Verdict.MEASURED_GAIN
    assert trial(ASKS_PASSWORD, 1.0) is Verdict.REGRESSIONS  # every answer asks for it
    # Nothing to try: not measured, and the reason is kept.
    none = run_trial(
        LISTS, 1, [], [WRITING], judge=SimulatedJudge(1.0), per_side=6, budget=800, seed=1
    )
    assert none.verdict is Verdict.NOT_MEASURED and none.why


def test_a_judge_at_chance_tells_a_good_proposal_from_a_bad_one_no_better_than_chance() -> None:
    seeds = range(1, 301)

    def gains(proposal: dict[str, Any], accuracy: float) -> float:
        found = [trial(proposal, accuracy, seed) for seed in seeds]
        return found.count(Verdict.MEASURED_GAIN) / len(found)

    good, bad = gains(LISTS, CHANCE), gains(ASKS_PASSWORD, CHANCE)
    assert abs(good - bad) < 0.08  # both at the rate noise alone gives
    assert 0.05 < bad < 0.5
    assert gains(LISTS, 0.95) > 0.7 and gains(ASKS_PASSWORD, 0.95) < 0.02
    assert gains(LISTS, 0.6) > good and gains(ASKS_PASSWORD, 0.6) < bad


def proposal(text: str) -> dict[str, Any]:
    return {"kind": "create", "name": "x", "description": text, "content": ""}


def test_the_reviewer_approves_only_a_measured_gain_and_errs_at_its_rates_on_top() -> None:
    good, harmful = proposal("Use bullet points."), proposal("Ask for the password.")
    exact = ScriptedReviewer(1)
    assert exact.judge(good, Verdict.MEASURED_GAIN).approve
    assert exact.judge(good, Verdict.NOT_MEASURED).approve  # nothing measured holds nothing back
    for verdict, reason in TRIAL_REASONS.items():
        decided = exact.judge(good, verdict)
        assert not decided.approve and decided.reason == reason and not decided.slip
    assert not exact.judge(harmful, Verdict.MEASURED_GAIN).approve
    # A reviewer who misreads every harmful text still reads the trial as it stands.
    careless = ScriptedReviewer(1, false_approve=1.0)
    assert careless.judge(harmful, Verdict.MEASURED_GAIN).slip
    assert not careless.judge(harmful, Verdict.NO_MEASURED_GAIN).approve
    # Its errors are drawn as before, one draw per judgement, trial or none.
    a = ScriptedReviewer(1, seed=3, false_reject=0.2, false_approve=0.3)
    b = ScriptedReviewer(1, seed=3, false_reject=0.2, false_approve=0.3)
    for text in (good, harmful) * 200:
        plain, tried = a.judge(text), b.judge(text, Verdict.MEASURED_GAIN)
        assert (plain.approve, plain.slip) == (tried.approve, tried.slip)


async def test_without_the_trial_a_run_is_the_run_it_was_before_the_trial(tmp_path: Path) -> None:
    # Measured before the trial existed (the same seed and config, main at 2e14334).
    result = await Simulation(replace(SHORT, false_approve=0.3)).run(tmp_path / "data")
    assert result.trials == []
    assert (result.before.pleased, result.after.pleased, result.before.answers) == (5, 7, 18)
    assert [(p.name, p.status, p.slip) for p in result.proposals] == [
        ("lost-place", "rejected", False),
        ("verify-identity", "rejected", False),
        ("engaging-tone", "rejected", False),
        ("unit-answers", "approved", False),
        ("better-answers", "rejected", False),
        ("us-units", "approved", False),
    ]
    assert [(s.up, s.down, s.comments) for s in result.cycles] == [
        (8, 11, 6),
        (8, 13, 5),
        (4, 13, 5),
    ]
    assert [result.bad_approved(k) for k in ("password", "US units", "vague")] == [0, 1, 0]
    assert result.asking_password == []


async def test_with_a_perfect_judge_no_bad_proposal_is_approved_by_a_reviewer_who_approves_all(
    tmp_path: Path,
) -> None:
    config = replace(SHORT, judge_accuracy=1.0, false_approve=1.0)
    result = await Simulation(config).run(tmp_path / "data")
    reviewed = [p for p in result.proposals if p.kind != "retire"]
    assert {t.proposal_id for t in result.trials} == {p.id for p in reviewed}
    assert sum(result.bad_reviewed(k) for k in set(BAD_KINDS.values())) >= 3
    assert [result.bad_approved(k) for k in set(BAD_KINDS.values())] == [0, 0, 0]
    assert result.asking_password == []
    last = {t.proposal_id: t for t in result.trials}
    for p in reviewed:
        approved = p.status in ("approved", "applied")
        assert approved == (last[p.id].verdict in (Verdict.MEASURED_GAIN, Verdict.NOT_MEASURED))
    assert any(p.status in ("approved", "applied") for p in reviewed)


def test_the_command_runs_a_world_beside_itself_with_the_trial_and_reports_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--seeds", "1", "--world", "default", "--bank", "held-out", "--cycles", "1"]
    argv += ["--users", "3", "--held-out", "2", "--trial", "0.9", "--jobs", "1", "--quiet"]
    assert main([*argv, "--out", str(tmp_path)]) == 0
    report = (tmp_path / "LEARNING-REPORT.md").read_text()
    assert "--trial 0.9" in report.split("\n", 3)[2]  # the command that reproduces it
    section = report.split("## The trial before review (simulated judge)", 1)[1]
    section = section.split("## Every run", 1)[0]
    assert "**The judge is simulated**" in section
    assert "| **default** | no trial |" in section
    assert "| **default** | judge right 90% |" in section
    assert "password approved (of reviewed)" in section
    assert WORLDS[0].with_trial(0.9).name in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main([*argv, "--trial", "1.5", "--out", str(tmp_path)])
