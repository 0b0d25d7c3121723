"""The trial before the card: each created or updated proposal that passes screening is tried
on real rated turns, with it and without it, and compared blind with the rated answer; the
pairs, the counts and the verdict are kept with the proposal and shown on its API."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from gateway.config import Settings
from gateway.ops.doctor import check_trial_judge
from gateway.synthesis import comparison
from tests.fakes.openai_server import (
    FakeOpenAI,
    Scripted,
    compared,
    comparison_answer,
    judge_by_marks,
)
from tests.synthesis_support import Gateway, answer, gateway, proposal, synth_settings

NAME = "chat-brevity"
FIXES = "How should I word a reminder to my team?"
LIKED = "Write a short message to remind my team about the meeting"
DISLIKED = "Can you write a message reminding my team of the deadline?"


def trial_settings(make_settings: Callable[..., Settings], fake: FakeOpenAI, **kw: Any) -> Settings:
    # Every session is read once: a pass's batch is what the next pass's proposal was not
    # drawn from.
    values: dict[str, Any] = {"trial_turns_per_side": 3, "evidence_window_days": 0, **kw}
    return synth_settings(make_settings, fake, **values)


def system_of(body: dict[str, Any]) -> str:
    return str(body["messages"][0]["content"])


def answering(with_it: str, control: str) -> Callable[[dict[str, Any]], str]:
    """The answering model: `with_it` where the prompt offers the proposal, else `control`."""

    def answer_(body: dict[str, Any]) -> str:
        return with_it if f"- {NAME}:" in system_of(body) else control

    return answer_


async def seed_world(gw: Gateway, fake: FakeOpenAI) -> list[int]:
    """👍 and 👎 sessions an earlier pass read (nothing came of them), then two 👎 sessions
    to draw from: the proposal would be offered on the earlier ones."""
    for i in range(2):
        await gw.seed(question=LIKED, answer="Meeting at 3.", rating=1, comment=None, at=2000.0 + i)
    await gw.seed(question=DISLIKED, answer="A long essay...", rating=-1, at=3000.0)
    fake.reply(answer())
    assert (await gw.synthesize())["proposed"] == []
    return [await gw.seed(question=FIXES, at=4000.0 + i) for i in range(2)]


async def pass_with_trial(gw: Gateway, fake: FakeOpenAI) -> tuple[dict[str, Any], dict[str, Any]]:
    drawn = await seed_world(gw, fake)
    fake.reply(answer(proposal(NAME, based_on=drawn)))
    run = await gw.synthesize()
    assert run["status"] == "ok", run
    (made,) = run["proposed"]
    status, body = await gw.call("GET", f"/proposals/{made['id']}")
    assert status == 200, body
    return run, body


async def test_better_with_it_and_the_same_without_it_is_a_measured_gain(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.default = answering("Short and BETTER.", "A plain answer.")
    async with gateway(trial_settings(make_settings, fake_llm)) as gw:
        _, body = await pass_with_trial(gw, fake_llm)
        trial = body["trial"]
        assert trial["verdict"] == "measured_gain", trial
        assert trial["fixes"]["tried"] == 2 and trial["guards"]["tried"] == 3
        assert trial["fixes"]["with_it"] == {"better": 2, "same": 0, "worse": 0}
        assert trial["fixes"]["control"] == {"better": 0, "same": 2, "worse": 0}
        assert trial["liked"]["tried"] == 2
        pairs = trial["pairs"]
        assert len(pairs) == 2 * (2 + 3)  # each turn on both arms
        assert {(p["side"], p["arm"]) for p in pairs} == {
            (s, a) for s in ("fixes", "guards") for a in ("with_it", "control")
        }
        fix = next(p for p in pairs if p["side"] == "fixes" and p["arm"] == "with_it")
        assert fix["question"] == FIXES and fix["rating"] == -1
        assert fix["before"].startswith("Here is a long") and fix["after"] == "Short and BETTER."
        assert fix["outcome"] == "better" and fix["comment"] == "far too long for a chat"
        assert trial["lines"][0] == "measured gain"
        assert (
            "Tried on 2 answers users disliked: better with it 2, without it 0."
            in (trial["lines"][1])
        )
        # Blind: the judge never sees which answer was rated; both orders occur.
        asked = [compared(b) for b in fake_llm.trial_requests]
        mine = [a for a in asked if "BETTER" in a[1] or "BETTER" in a[2]]
        assert {"BETTER" in first for _, first, _ in mine} == {True, False}
        for body_ in fake_llm.trial_requests:
            assert body_["response_format"]["json_schema"]["schema"] == comparison.SCHEMA
            assert body_["max_tokens"] == comparison.ANSWER_TOKENS


async def test_worse_on_answers_users_liked_is_regressions(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    def answer_(body: dict[str, Any]) -> str:
        if f"- {NAME}:" not in system_of(body):
            return "A plain answer."
        asked = str(body["messages"][-1]["content"])
        return "WORSE, off topic." if asked == LIKED else "Short and BETTER."

    fake_llm.default = answer_
    async with gateway(trial_settings(make_settings, fake_llm)) as gw:
        _, body = await pass_with_trial(gw, fake_llm)
        trial = body["trial"]
        assert trial["verdict"] == "regressions", trial
        assert trial["liked"]["with_it"]["worse"] == 2
        assert trial["liked"]["control"]["worse"] == 0


async def test_the_same_both_ways_is_no_measured_gain(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.default = answering("An answer.", "An answer.")
    async with gateway(trial_settings(make_settings, fake_llm)) as gw:
        _, body = await pass_with_trial(gw, fake_llm)
        trial = body["trial"]
        assert trial["verdict"] == "no_measured_gain", trial
        assert trial["fixes"]["with_it"] == {"better": 0, "same": 2, "worse": 0}


async def test_the_control_arm_measures_the_judges_noise(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    # Every new answer is judged better, with the proposal or without it: no gain is measured.
    fake_llm.default = answering("Short and BETTER.", "Also BETTER.")
    async with gateway(trial_settings(make_settings, fake_llm)) as gw:
        _, body = await pass_with_trial(gw, fake_llm)
        trial = body["trial"]
        assert trial["fixes"]["with_it"]["better"] == trial["fixes"]["control"]["better"] == 2
        assert trial["verdict"] == "no_measured_gain", trial


async def test_the_call_budget_stops_the_trial_and_says_so(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.default = answering("Short and BETTER.", "A plain answer.")
    settings = trial_settings(make_settings, fake_llm, trial_calls=13)
    async with gateway(settings) as gw:
        _, body = await pass_with_trial(gw, fake_llm)
        trial = body["trial"]
        # Two turns' worst case (6 calls each) fit 13; a third does not.
        assert len(trial["pairs"]) == 4 and trial["calls"] <= 13
        assert "SKILLGATE_TRIAL_CALLS" in trial["reason"]
        assert trial["verdict"] == "measured_gain"
        assert body["status"] == "pending"


async def test_a_judge_answering_garbage_is_not_measured_and_the_proposal_goes_to_review(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.default = answering("Short and BETTER.", "A plain answer.")
    fake_llm.trial_judge = lambda body: "I think the first one, probably."
    async with gateway(trial_settings(make_settings, fake_llm)) as gw:
        _, body = await pass_with_trial(gw, fake_llm)
        trial = body["trial"]
        assert body["status"] == "pending"  # never held back
        assert trial["verdict"] == "not_measured"
        assert "fake-model cannot compare answers (" in trial["reason"] and trial["pairs"] == []


async def test_a_calibrated_judge_that_answers_garbage_in_the_trial_is_not_measured(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.default = answering("Short and BETTER.", "A plain answer.")

    def judge(body: dict[str, Any]) -> Scripted | str:
        found = judge_by_marks(body)
        return found if "calibration" in str(found) else "{not json"

    fake_llm.trial_judge = judge
    async with gateway(trial_settings(make_settings, fake_llm)) as gw:
        _, body = await pass_with_trial(gw, fake_llm)
        trial = body["trial"]
        assert body["status"] == "pending"
        assert trial["verdict"] == "not_measured", trial
        assert "no usable answer" in trial["reason"]
        assert trial["pairs"] and all(p["outcome"] is None for p in trial["pairs"])


async def test_an_unreachable_answering_model_is_not_measured(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with gateway(trial_settings(make_settings, fake_llm)) as gw:
        drawn = await seed_world(gw, fake_llm)
        fake_llm.reply(answer(proposal(NAME, based_on=drawn)))
        for _ in range(10):
            fake_llm.script.append(Scripted(status=500, message="down"))
        run = await gw.synthesize()
        assert run["status"] == "ok", run
        (made,) = run["proposed"]
        status, body = await gw.call("GET", f"/proposals/{made['id']}")
        assert status == 200, body
        trial = body["trial"]
        assert body["status"] == "pending"
        assert trial["verdict"] == "not_measured"
        assert "could not be asked" in trial["reason"]


async def test_no_rated_turns_is_not_measured_and_makes_no_call(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with gateway(trial_settings(make_settings, fake_llm)) as gw:
        failed = await gw.seed(rating=None, failed=True)
        fake_llm.reply(answer(proposal(NAME, based_on=[failed])))
        run = await gw.synthesize()
        (made,) = run["proposed"]
        status, body = await gw.call("GET", f"/proposals/{made['id']}")
        assert status == 200 and body["trial"]["verdict"] == "not_measured"
        assert body["trial"]["reason"] == "no rated answers to try it on"
        assert len(fake_llm.requests) == 1  # the synthesis call alone
        assert fake_llm.trial_requests == []  # not even the judge's calibration
        assert json.loads(json.dumps(body["trial"]["pairs"])) == []


def prompt_tokens(body: dict[str, Any]) -> int:
    """As the fake server reports them."""
    return sum(len(str(m.get("content") or "")) for m in body.get("messages", [])) // 4


async def test_trial_calls_are_learning_spend_on_the_passs_record_and_in_usage(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.default = answering("Short and BETTER.", "A plain answer.")
    async with gateway(trial_settings(make_settings, fake_llm)) as gw:
        drawn = await seed_world(gw, fake_llm)
        before = (len(fake_llm.requests), len(fake_llm.trial_requests))
        fake_llm.reply(answer(proposal(NAME, based_on=drawn)))
        run = await gw.synthesize()
        asked = [
            *fake_llm.requests[before[0] :],
            *fake_llm.trial_requests[before[1] :],
            *fake_llm.same_claim_requests,
        ]
        replays = fake_llm.requests[before[0] + 1 :]
        assert replays and all(b["model"] == "fake-model" for b in replays)
        # The pass's record holds every call it made: synthesis, the trial's answers, its
        # judge's calibration and comparisons (the first pass's are on its own record).
        assert run["prompt_tokens"] == sum(prompt_tokens(b) for b in asked)
        status, usage = await gw.call("GET", "/usage?days=2")
        assert status == 200
        (day,) = usage["learning_days"]
        assert day["tokens"] >= run["prompt_tokens"]
        assert usage["answers"]["answers"] == 0  # no chat answer was counted


async def test_the_days_learning_budget_reached_stops_the_trial_and_the_card_says_so(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.default = answering("Short and BETTER.", "A plain answer.")
    settings = trial_settings(make_settings, fake_llm, learning_daily_tokens=1)
    async with gateway(settings) as gw:
        drawn = [await gw.seed(question=FIXES)]
        fake_llm.reply(answer(proposal(NAME, based_on=drawn)))
        run = await gw.synthesize()
        (made,) = run["proposed"]
        status, body = await gw.call("GET", f"/proposals/{made['id']}")
        assert status == 200 and body["status"] == "pending"
        trial = body["trial"]
        assert trial["verdict"] == "not_measured" and trial["pairs"] == []
        assert trial["reason"].startswith("learning budget reached")
        assert len(fake_llm.requests) == 1  # the synthesis call; no answer was replayed


async def test_an_updates_guards_are_its_skills_own_answers_where_the_index_offers_nothing(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    # An index budget too small for any line: no answer is tried for being offered the
    # proposal; the answers that loaded the skill it replaces are tried all the same.
    target = "troubleshooting-steps"
    fake_llm.default = answering("An answer.", "An answer.")
    settings = trial_settings(make_settings, fake_llm, skill_index_tokens=50)
    async with gateway(settings) as gw:
        own = await gw.seed(
            question="My router blinks red", rating=1, comment=None, loaded=[target]
        )
        await gw.seed(question="Summarise this article", rating=1, comment=None)
        fake_llm.reply(answer())
        assert (await gw.synthesize())["proposed"] == []
        drawn = [await gw.seed(question="The printer is broken")]
        content = "Ask which light blinks, then restart the router, then call the provider."
        draft = proposal(target, kind="update", target=target, content=content, based_on=drawn)
        draft["description"] = (
            "Diagnose a broken router, printer, laptop or phone step by step: ask what the"
            " user sees, which light blinks or which message shows, then give a short"
            " ordered path to a fix, one step a line."
        )
        fake_llm.reply(answer(draft))
        run = await gw.synthesize()
        (made,) = run["proposed"]
        status, body = await gw.call("GET", f"/proposals/{made['id']}")
        assert status == 200, body
        guards = [p for p in body["trial"]["pairs"] if p["side"] == "guards"]
        assert {p["question"] for p in guards} == {"My router blinks red"}
        assert {p["arm"] for p in guards} == {"with_it", "control"}
        assert own


async def test_doctor_calibrates_the_trial_judge_and_keeps_the_result(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = trial_settings(make_settings, fake_llm)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    fake_llm.trial_judge = lambda body: comparison_answer(1, "the first one")
    check = await check_trial_judge(settings)
    assert (check.name, check.status) == ("trial judge", "warn")
    assert check.detail.startswith("fake-model on the trial question: unable to judge")
    assert "not measured" in (check.fix or "") and "SKILLGATE_TRUSTED_JUDGES" in (check.fix or "")

    fake_llm.trial_judge = judge_by_marks
    check = await check_trial_judge(settings)
    assert check.status == "ok" and "able to judge: 16 of 16 right" in check.detail
    # Kept: the gateway's trial trusts it without trying it again.
    async with gateway(settings) as gw:
        found = await gw.parts.store.calibration("fake-model", comparison.TRIAL_QUESTION.kind)
        assert found is not None and found.verdict == "able"
        calibrating = len(fake_llm.trial_requests)
        fake_llm.default = answering("Short and BETTER.", "A plain answer.")
        drawn = [await gw.seed(question=FIXES)]
        fake_llm.reply(answer(proposal(NAME, based_on=drawn)))
        run = await gw.synthesize()
        assert run["proposed"]
        assert len(fake_llm.trial_requests) - calibrating == 2  # the two comparisons only
