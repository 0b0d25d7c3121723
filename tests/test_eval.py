"""The learning evaluation: a short run learns, keeps rejections out and stays in budget."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from eval.__main__ import main, write
from eval.answers import Style, compose, style_of
from eval.config import Config
from eval.corpus import CORPUS
from eval.reviewer import judge_text
from eval.simulation import Simulation
from eval.skills import BAD, GOOD
from eval.world import PREFERENCES, meets, pleased
from gateway.skills.proposals import Candidate, Rejection
from gateway.skills.similarity import body_hash, change_text, same_claim

# Three cycles of ten users: a fraction of the default run, a few seconds on loopback. A tight
# index budget makes the bound bite: the bundled skills no longer all fit beside the learned.
SHORT = Config(
    seed=7,
    cycles=3,
    users=10,
    questions=3,
    held_out=6,
    held_out_questions=3,
    index_budget=200,
    bad_share=1.0,  # a poor proposal and a repeat of a rejection in every pass
    reviewer_slips=0,
)
# Seed 7 raises the held-out rate by 0.44. Seeds 1 to 12 of this short world raise it by 0.11
# to 0.83, eleven of them by more than the margin: three cycles are few, and a preference the
# held-out users share may be learned only in the last one.
MARGIN = 0.2


async def test_a_short_run_learns_never_brings_a_rejection_back_and_keeps_the_index_in_budget(
    tmp_path: Path,
) -> None:
    result = await Simulation(SHORT).run(tmp_path / "data")

    assert result.after.rate > result.before.rate + MARGIN
    assert result.cycles[-1].learned_live >= 2

    # The model tried to bring rejected proposals back after restarts; none reached review.
    assert result.starts == SHORT.cycles + 1
    assert any(p.status == "rejected" for p in result.proposals)
    tried = sum(s.tried["repeat"] for s in result.cycles)
    assert tried > 0
    assert sum(s.repeats_suppressed for s in result.cycles) >= tried
    assert result.repeats == []

    # Every turn's skill index fit the budget, and the budget left skills out.
    assert 0 < result.index_max <= SHORT.index_budget
    assert any(c.offered < result.cycles[-1].skills_live for c in result.final_costs)

    write(result, tmp_path / "docs", "python -m eval --seed 7")
    report = (tmp_path / "docs" / "LEARNING-REPORT.md").read_text()
    assert "Re-proposals of rejected content that reached review: 0**" in report
    assert f"{result.before.rate:.0%} before, {result.after.rate:.0%} after" in report
    chart = ET.parse(tmp_path / "docs" / "learning-chart.svg").getroot()
    assert chart.tag == "{http://www.w3.org/2000/svg}svg"
    assert len(chart.findall(".//{http://www.w3.org/2000/svg}polyline")) == 2


def test_the_scripted_world_rewards_exactly_the_skills_it_claims_to() -> None:
    learned = style_of(d.content for d in GOOD.values())
    for question in CORPUS:
        base = compose(question, Style())
        everything = compose(question, learned)
        for preference, draft in GOOD.items():
            alone = compose(question, style_of([draft.content]))
            if preference != "metric" or question.measurement:
                assert not meets(preference, base, question), (preference, question.text)
            assert meets(preference, alone, question), (preference, question.text)
        assert pleased(frozenset(PREFERENCES), everything, question), question.text


def test_the_reviewer_approves_the_good_skills_and_refuses_every_poor_one() -> None:
    for draft in GOOD.values():
        assert judge_text(f"{draft.name}\n{draft.description}\n{draft.content}").approve
    for idea in BAD:
        for draft in (idea.draft, idea.variant):
            verdict = judge_text(f"{draft.name}\n{draft.description}\n{draft.content}")
            assert not verdict.approve and verdict.reason, draft.name


def test_a_reworded_poor_idea_is_the_same_claim_to_the_gateway() -> None:
    for idea in BAD:
        original, variant = idea.draft, idea.variant
        rejected = Rejection(
            kind="create",
            name=original.name,
            description=original.description,
            content_hash=body_hash(original.content),
            rejected_at=0.0,
        )
        again = Candidate(
            kind="create",
            name=variant.name,
            description=variant.description,
            content=variant.content,
            content_hash=body_hash(variant.content),
            change_text=change_text(None, variant.content),
            generated_at=0.0,
        )
        assert again.content_hash != rejected.content_hash
        assert same_claim(again, rejected, 0.85), original.name


def test_the_command_explains_itself(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    for option in ("--seed", "--cycles", "--users", "--held-out", "--out", "--real-model"):
        assert option in out
