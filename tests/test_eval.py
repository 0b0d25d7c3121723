"""The learning evaluation: a short run learns, rejections stay out, the report leads with spread.

The report runs both phrase banks and leads with the held-out one. Checks of the
simulated world itself come with it: the learning side (model, answer reader,
reviewer) never imports or reads either phrase bank, users speak in the words of the
bank they are given, the scripted synthesis writes what the comments it is shown say
(also words it was never prepared for), and the reviewer errs at the rates it is given.
"""

from __future__ import annotations

import ast
import json
import random
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from eval.__main__ import main, write
from eval.config import WORLDS, Config
from eval.corpus import CORPUS
from eval.model import ScriptedModel
from eval.phrases_held_out import HELD_OUT
from eval.reviewer import ScriptedReviewer
from eval.simulation import Simulation
from eval.suite import noise_free_after, noise_free_gain, run_suite
from eval.world import BANKS, Habits, User, rate

REPO = Path(__file__).resolve().parent.parent
ROOT = REPO / "eval"
# Three cycles of eight users: a fraction of the default run, a few seconds on loopback. With
# the held-out phrase bank (the default) seed 4 raises the noise-free rate by 0.11 (two of 18
# answers); seeds 1 to 6 of this short world change it by +0.00 to +0.11, two of them up (with
# the tuned bank four up, to +0.33): three cycles are few, and the report's default run (6
# cycles, 5 seeds, 7 worlds, both banks) is where the spread is measured. A tighter index
# budget (200 tokens) leaves bundled skills out beside the learned ones, and the answers then
# lost their points and brevity (seed 2: every preference met in 50% of answers, then 0%).
SHORT = Config(
    seed=4,
    cycles=3,
    users=8,
    questions=3,
    held_out=6,
    held_out_questions=3,
    bad_share=1.0,  # a poor proposal, a repeat of a rejection and a copy in every pass
)


async def test_a_short_run_learns_never_brings_a_rejection_back_and_keeps_the_index_in_budget(
    tmp_path: Path,
) -> None:
    result = await Simulation(SHORT).run(tmp_path / "data")

    assert result.after.pleased_rate > result.before.pleased_rate
    assert result.cycles[-1].learned_live >= 1

    # The model tried to bring rejected proposals back after restarts; none reached review.
    assert result.starts == SHORT.cycles + 1
    assert any(p.status == "rejected" for p in result.proposals)
    tried = sum(s.tried["repeat"] for s in result.cycles)
    assert tried > 0
    assert sum(s.repeats_suppressed for s in result.cycles) >= tried
    assert result.repeats == [] and result.leaked == []

    # Every turn's skill index fit the budget.
    assert 0 < result.index_max <= SHORT.index_budget


def test_the_report_runs_both_banks_and_leads_with_the_held_out_one_and_its_spread(
    tmp_path: Path,
) -> None:
    tiny = Config(cycles=1, users=3, questions=1, held_out=2, held_out_questions=2)
    suite = run_suite(tiny, [1, 2], [WORLDS[0]], jobs=1)
    assert suite.banks == ["held-out", "tuned"]
    assert [(w.world.name, w.bank, [r.config.bank for r in w.runs]) for w in suite.worlds] == [
        ("default", "held-out", ["held-out"] * 2),
        ("default", "tuned", ["tuned"] * 2),
    ]
    write(suite, tmp_path, "python -m eval --seeds 2")
    report = (tmp_path / "LEARNING-REPORT.md").read_text()
    summary = report.split("## Summary", 1)[1].split("## Two phrase banks", 1)[0]
    held_out, tuned = suite.worlds[0], suite.worlds[1]

    # The headline table is the held-out bank's, with its spread over the seeds.
    after = held_out.spread(noise_free_after)
    gain = held_out.spread(noise_free_gain)
    assert summary.index("meeting every preference, before") < summary.index("👍 after")
    assert "*held-out* phrase bank" in summary
    assert f"| {after.median:.0%} ({after.low:.0%} to {after.high:.0%}) |" in summary
    assert f"with the held-out bank, the noise-free rate changes by {gain.median * 100:+.0f}" in (
        summary
    )
    assert summary.count("| **default** |") == 1  # the tuned bank is not mixed in

    # Both banks side by side, world by world; every run in its own row.
    banks = report.split("## Two phrase banks", 1)[1].split("## Every run", 1)[0]
    for bank, runs in (("held-out", held_out), ("tuned", tuned)):
        spread = runs.spread(noise_free_after)
        assert f"after, {bank} bank" in banks
        assert f"{spread.median:.0%} ({spread.low:.0%} to {spread.high:.0%})" in banks
        assert report.count(f"| default | {bank} | ") == 2  # one row per seed
    assert "| wants metric units |" in banks  # each preference met, before and after
    assert "## One run in detail: default world, held-out bank, seed 1" in report

    # The panel measures the skills, not the holdout's draws: where no skill changed, neither
    # did its answers (a lagging bundled skill is withheld from half the turns at first).
    unchanged = [
        r
        for w in suite.worlds
        for r in w.runs
        if not any(p.status in ("approved", "applied") for p in r.proposals)
    ]
    assert unchanged
    assert all(r.after.pleased == r.before.pleased for r in unchanged)
    chart = ET.parse(tmp_path / "learning-chart.svg").getroot()
    assert chart.tag == "{http://www.w3.org/2000/svg}svg"
    assert len(chart.findall(".//{http://www.w3.org/2000/svg}polyline")) == 2


def imports_of(module: str) -> set[str]:
    tree = ast.parse((ROOT / f"{module}.py").read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def test_the_learning_side_never_imports_or_reads_either_phrase_bank() -> None:
    learning = {"model", "answers", "skills", "reviewer", "corpus"}
    user_side = ("phrases", "phrases_held_out", "world")
    seen: set[str] = set()
    todo = set(learning)
    while todo:
        module = todo.pop()
        seen.add(module)
        for name in imports_of(module):
            if name.startswith("eval."):
                own = name.removeprefix("eval.")
                assert own not in user_side, f"eval.{module} imports {name}"
                if own not in seen and (ROOT / f"{own}.py").exists():
                    todo.add(own)
    # Nor does it open the held-out bank some other way, or carry a copy of its phrases.
    phrases = [p.lower() for case in HELD_OUT.complaints.values() for p in case]
    sources = [ROOT / f"{m}.py" for m in seen] + [REPO / "tests" / "fakes" / "openai_server.py"]
    for path in sources:
        text = path.read_text(encoding="utf-8").lower()
        assert "phrases_held_out" not in text, path
        assert not [p for p in phrases if p in text], path
    for path in (REPO / "gateway").rglob("*.py"):
        assert "phrases_held_out" not in path.read_text(encoding="utf-8"), path


def test_users_complain_in_the_words_of_the_bank_they_are_given() -> None:
    user = User(1, frozenset({"bullets", "brief"}), "1:user:1")
    always = Habits(rate=1.0, noise=0.0, comment=1.0)
    question = CORPUS[0]
    wall = " ".join(["A long paragraph without a list."] * 20)
    for bank in BANKS.values():
        said = {
            rate(user, wall, question, random.Random(n), always, bank).comment for n in range(50)
        }
        assert said <= {*bank.complaints["bullets"], *bank.complaints["brief"]}
        assert len(said) > 6  # both preferences, several phrasings
    held_out, tuned = BANKS["held-out"], BANKS["tuned"]
    for case, phrases in held_out.complaints.items():
        assert len(phrases) == len(tuned.complaints[case])  # same draws, other words
        assert not set(phrases) & set(tuned.complaints[case])


def fenced(session: int, comment: str) -> str:
    return (
        f'<untrusted-chat-0123456789ab session="{session}" channel="telegram">\n'
        f'[user] q\n[assistant] a\n  rating: 👎 comment: "{comment}"\n'
        "</untrusted-chat-0123456789ab>"
    )


def synthesize(model: ScriptedModel, *comments: str) -> list[dict[str, object]]:
    prompt = "## Enabled skills (name: when to use it)\n(none)\n\n## Evidence\n\n" + "\n\n".join(
        fenced(n + 1, c) for n, c in enumerate(comments)
    )
    answer = model.synthesize(
        [{"role": "system", "content": ""}, {"role": "user", "content": prompt}]
    )
    return list(json.loads(answer)["proposals"])


def test_the_scripted_synthesis_writes_what_the_comments_it_is_shown_say() -> None:
    model = ScriptedModel(1, bad_share=0.0)
    # Words no part of the simulation was written for: a generic method, not a lookup.
    (made,) = synthesize(model, "more emoji please", "I love emoji, add emoji")
    assert made["name"] == "emoji-answers" and made["based_on"] == [1, 2]
    assert "more emoji please" in str(made["content"])
    assert synthesize(model, "more emoji please") == []  # one comment is not enough
    assert synthesize(model, "more emoji please", "shorter please") == []  # nothing shared


def test_the_blind_reviewer_errs_at_the_rates_it_is_given() -> None:
    good = {
        "kind": "create",
        "name": "list-facts",
        "description": "Use bullet points.",
        "content": "",
    }
    vague = {"kind": "create", "name": "nicer", "description": "Be nicer.", "content": ""}
    reviewer = ScriptedReviewer(1, seed=3, false_reject=0.2, false_approve=0.3)
    rejected = sum(not reviewer.judge(good).approve for _ in range(2000)) / 2000
    approved = sum(reviewer.judge(vague).approve for _ in range(2000)) / 2000
    assert 0.17 < rejected < 0.23 and 0.27 < approved < 0.33
    exact = ScriptedReviewer(1)
    assert exact.judge(good).approve and not exact.judge(vague).approve


def test_the_command_explains_itself(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    options = ("--seeds", "--world", "--bank", "--cycles", "--users", "--jobs", "--out")
    for option in (*options, "--real-model"):
        assert option in out
