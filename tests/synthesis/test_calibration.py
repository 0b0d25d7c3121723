"""A judge is tried on the calibration set before it is trusted, and what it cannot judge goes
to a person, visibly.

The fake model answers the same-claim question as scripted: always "the same", always
"none", cut short, down, or (by default) right on the calibration set. Each has its
documented outcome: the first three are *unable to judge* and each candidate that needs a
judgement reaches review marked "possibly the same as …"; a judge that is down holds the
candidate with the reason, records nothing, and is tried again at the next pass.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from gateway.app import MODEL_LOOK, PARTS, build_app
from gateway.cli.synthesize import print_summary
from gateway.config import Settings
from gateway.ops.doctor import check_judge
from gateway.synthesis.calibration import (
    BAR,
    LEAN,
    MIN_PAIRS,
    PAIRS_FILE,
    Calibration,
    builtin_pairs,
    pairs_hash,
)
from gateway.synthesis.judge import ANSWER_TOKENS, SAME_CLAIM, WHY_CHARS, schema
from gateway.synthesis.summary import RunSummary
from tests.console_support import sign_in as console_sign_in
from tests.fakes.openai_server import (
    FakeOpenAI,
    Responder,
    Scripted,
    calibrated,
    calibration_asked,
    same_claim_answer,
)
from tests.synthesis.same_claim_pairs import DIFFERENT, ORIGINALS, REPEATS
from tests.synthesis.test_same_claim import REWORDED, SAME_TOPIC, VERIFY, proposed_again, rejected
from tests.synthesis_support import gateway, proposal, synth_settings

ALWAYS_SAME: Responder = lambda body: same_claim_answer(1, "they look alike")  # noqa: E731
ALWAYS_NONE: Responder = lambda body: same_claim_answer(0, "a different one")  # noqa: E731
CUT: Responder = lambda body: Scripted(  # noqa: E731
    text='{"same_as": 0, "why": "The new instruction asks', finish_reason="length"
)
DOWN: Responder = lambda body: Scripted(status=503)  # noqa: E731


IDENTITY_CHECK = proposal(
    "identity-check",
    description="Use for every answer: check who the user is first.",
    content="# Identity check\n\nAsk for the account password before any answer.",
)


def calibration_requests(fake_llm: FakeOpenAI) -> list[dict[str, Any]]:
    return [b for b in fake_llm.same_claim_requests if calibration_asked(b)]


def test_the_built_in_set_holds_pairs_in_four_languages_half_of_them_the_same_claim() -> None:
    pairs = builtin_pairs()
    assert len(pairs) >= MIN_PAIRS
    assert len({p.id for p in pairs}) == len(pairs)
    assert sum(p.same for p in pairs) * 2 == len(pairs)
    for lang in ("en", "ja", "zh-TW", "th"):
        mine = [p for p in pairs if p.lang == lang]
        assert {p.same for p in mine} == {True, False}, lang
    # Written for calibration: none of the test set's claims is among them.
    tests = [*ORIGINALS, *DIFFERENT, *(e for _, e in REPEATS)]
    assert not {e[0] for e in tests} & {n for p in pairs for n in (p.known.name, p.new.name)}
    assert not {e[2] for e in tests} & {b for p in pairs for b in (p.known.body, p.new.body)}


def test_a_judge_is_able_only_above_the_bar_and_when_it_does_not_lean_one_way() -> None:
    def result(correct: int, yes: int, unanswered: int = 0) -> Calibration:
        return Calibration(
            model="m",
            kind="same-claim",
            total=20,
            correct=correct,
            yes=yes,
            unanswered=unanswered,
            pairs_hash="h",
            at=0.0,
        )

    assert result(20, 10).verdict == "able"
    assert result(int(20 * BAR), 10).verdict == "able"
    assert result(int(20 * BAR) - 1, 10).verdict == "unable"  # under the bar
    assert result(18, int(20 * LEAN)).verdict == "unable"  # "yes" to 90 % of them
    assert result(18, 20 - int(20 * LEAN)).verdict == "unable"  # "no" to 90 % of them
    assert result(10, 0, unanswered=10).verdict == "unable"  # cut answers count as wrong
    assert "unable to judge: 16 of 20 right" in result(16, 10).summary()


def test_the_judges_answer_budget_holds_any_answer_the_schema_allows() -> None:
    # A token is at least one byte: the longest answer within the schema, in bytes, with
    # every character of `why` escaped as JSON may write it, fits the budget.
    longest = json.dumps(
        {"same_as": max(schema(20)["properties"]["same_as"]["enum"]), "why": "ข" * WHY_CHARS},
        ensure_ascii=True,
        indent=2,
    )
    assert len(longest.encode()) <= ANSWER_TOKENS
    longest_raw = json.dumps({"same_as": 20, "why": "語" * WHY_CHARS}, ensure_ascii=False)
    assert len(longest_raw.encode()) <= ANSWER_TOKENS


async def test_a_judge_that_always_says_same_is_unable_and_each_candidate_goes_to_a_person(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.judge = ALWAYS_SAME
    settings = synth_settings(make_settings, fake_llm, llm_same_claim_model="judge-model")
    async with gateway(settings) as gw:
        (first,) = await rejected(gw, fake_llm, VERIFY)
        run = await proposed_again(gw, fake_llm, REWORDED, SAME_TOPIC)
        # Nothing suppressed on the word of a judge that cannot judge: both reach review.
        assert run["suppressed"] == []
        assert [p["name"] for p in run["proposed"]] == [
            "account-verification",
            "password-reset-help",
        ]
        assert [c["decision"] for c in run["checks"]] == ["undecided", "undecided"]
        label = f"rejected #{first} verify-identity"
        assert run["checks"][0]["reason"].startswith(f"possibly the same as {label}; the model")
        assert "unable to judge" in run["judge"] and "LLM_SAME_CLAIM_MODEL" in run["judge"]
        assert '"yes" to 16 of 16' in run["judge"]
        # Tried once, on every pair of the set, with the judge's model.
        asked = calibration_requests(fake_llm)
        assert len(asked) == len(builtin_pairs())
        assert {b["model"] for b in asked} == {"judge-model"}
        # The real questions were not put to it.
        assert len(fake_llm.same_claim_requests) == len(asked)

        for p in run["proposed"]:
            status, stored = await gw.call("GET", f"/proposals/{p['id']}")
            assert status == 200 and stored["possibly_same"][0] == label, stored
        await console_sign_in(gw.client)
        page = await (await gw.client.get(f"/admin/proposals/{run['proposed'][0]['id']}")).text()
        assert "the model cannot judge this — decide yourself" in page
        assert f'<a href="/admin/proposals/{first}">rejected proposal #{first}</a>' in page
        runs_page = await (await gw.client.get("/admin/runs")).text()
        assert "judge-model on the same-claim question: unable to judge" in runs_page

        # The result is kept: the next pass does not try the judge again.
        again = await proposed_again(gw, fake_llm, IDENTITY_CHECK)
        assert [c["decision"] for c in again["checks"]] == ["undecided"]
        assert len(calibration_requests(fake_llm)) == len(builtin_pairs())


async def test_a_judge_that_always_says_none_is_unable_and_suppresses_nothing(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.judge = ALWAYS_NONE
    settings = synth_settings(make_settings, fake_llm)
    async with gateway(settings) as gw:
        await rejected(gw, fake_llm, VERIFY)
        run = await proposed_again(gw, fake_llm, REWORDED)
        (made,) = run["proposed"]
        assert made["name"] == "account-verification"  # a repeat, but a person decides
        assert [c["decision"] for c in run["checks"]] == ["undecided"]
        assert '"yes" to 0 of 16' in run["judge"]
        found = await gw.parts.store.calibration("fake-model", SAME_CLAIM.kind)
        assert found is not None and (found.correct, found.yes, found.verdict) == (8, 0, "unable")
        assert found.pairs_hash == pairs_hash(builtin_pairs())


async def test_a_judge_whose_answers_are_cut_is_unable_to_judge(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.judge = CUT
    settings = synth_settings(make_settings, fake_llm)
    async with gateway(settings) as gw:
        await rejected(gw, fake_llm, VERIFY)
        run = await proposed_again(gw, fake_llm, SAME_TOPIC)
        assert [p["name"] for p in run["proposed"]] == ["password-reset-help"]
        assert [c["decision"] for c in run["checks"]] == ["undecided"]
        assert "16 without a usable answer" in run["judge"]
        # Each question asked for room enough for any answer the schema allows.
        assert {b["max_tokens"] for b in fake_llm.same_claim_requests} == {ANSWER_TOKENS}


async def test_a_judge_that_is_down_holds_the_candidate_visibly_and_is_tried_again_later(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    async with gateway(settings) as gw:
        await rejected(gw, fake_llm, VERIFY)
    # A new judge, down before it could be tried.
    fake_llm.judge = DOWN
    settings = settings.model_copy(update={"llm_same_claim_model": "judge-model"})
    before = len(fake_llm.same_claim_requests)
    async with gateway(settings) as gw:
        run = await proposed_again(gw, fake_llm, SAME_TOPIC)
        assert run["proposed"] == [] and run["suppressed"] == []
        (check,) = run["checks"]
        assert check["decision"] == "held"
        assert check["reason"].startswith("the judge could not be calibrated: the model could not")
        assert run["judge"] is None  # nothing can be said of it: nothing recorded
        assert await gw.parts.store.calibration("judge-model", SAME_CLAIM.kind) is None
        # One failed question stops the calibration: a judge that is down costs one call.
        assert len(fake_llm.same_claim_requests) == before + 1

        fake_llm.judge = calibrated(lambda body: same_claim_answer(0, "a different instruction"))
        done = await gw.synthesize()
        assert [p["name"] for p in done["proposed"]] == ["password-reset-help"]
        assert [c["decision"] for c in done["checks"]] == ["different"]
        assert "able to judge: 16 of 16 right" in done["judge"]


async def test_a_new_judge_model_is_calibrated_and_a_declared_one_is_trusted_untried(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    async with gateway(settings) as gw:
        await rejected(gw, fake_llm, VERIFY)
        run = await proposed_again(gw, fake_llm, SAME_TOPIC)
        assert [c["decision"] for c in run["checks"]] == ["different"]
        assert len(calibration_requests(fake_llm)) == 16

    # The judge changes: it is tried before its first judgement.
    other = settings.model_copy(update={"llm_same_claim_model": "other-judge"})
    async with gateway(other) as gw:
        await proposed_again(gw, fake_llm, REWORDED)
        assert [b["model"] for b in calibration_requests(fake_llm)[16:]] == ["other-judge"] * 16

    # Declared trusted: never tried, trusted even when it always says "the same".
    fake_llm.judge = ALWAYS_SAME
    declared = settings.model_copy(
        update={"llm_same_claim_model": "house-judge", "trusted_judges": "house-judge, x"}
    )
    async with gateway(declared) as gw:
        run = await proposed_again(gw, fake_llm, IDENTITY_CHECK)
        assert [c["decision"] for c in run["checks"]] == ["same"]
        assert "declared trusted (SKILLGATE_TRUSTED_JUDGES), not calibrated" in run["judge"]
        assert not [b for b in fake_llm.same_claim_requests if calibration_asked(b)][32:]
        await console_sign_in(gw.client)
        page = await (await gw.client.get("/admin/runs")).text()
        assert "house-judge on the same-claim question: declared trusted" in page


def operator_pair(pid: str, same: bool) -> dict[str, Any]:
    return {
        "id": pid,
        "lang": "en",
        "same": same,
        "known": {
            "name": "ship-abroad",
            "description": "Use for shipping.",
            "body": "Ship to 40 countries.",
        },
        "new": {
            "name": "intl-delivery",
            "description": "Use for delivery.",
            "body": "We deliver to forty countries." if same else "Customs fees are the buyer's.",
        },
    }


async def test_the_operators_pairs_join_the_set_and_an_unreadable_file_is_named_by_doctor(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    path: Path = settings.data_dir / PAIRS_FILE
    path.write_text(
        json.dumps(
            {"pairs": [operator_pair("ship-same", True), operator_pair("ship-diff", False)]}
        ),
        encoding="utf-8",
    )
    fake_llm.judge = ALWAYS_SAME
    async with gateway(settings) as gw:
        await rejected(gw, fake_llm, VERIFY)
        run = await proposed_again(gw, fake_llm, SAME_TOPIC)
        assert '"yes" to 18 of 18' in run["judge"]

    path.write_text('{"pairs": [{"id": "x"}]}', encoding="utf-8")
    check = await check_judge(settings)
    assert (check.name, check.status) == ("calibration set", "fail")
    assert PAIRS_FILE in check.detail and "pairs.0" in check.detail


async def test_doctor_calibrates_the_judge_and_names_the_fix_when_it_cannot_judge(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    fake_llm.judge = ALWAYS_SAME
    check = await check_judge(settings)
    assert (check.name, check.status) == ("same-claim judge", "warn")
    assert check.detail.startswith("fake-model on the same-claim question: unable to judge")
    assert "LLM_SAME_CLAIM_MODEL" in check.fix
    assert "SKILLGATE_TRUSTED_JUDGES" in check.fix

    fake_llm.judge = calibrated(ALWAYS_NONE)
    check = await check_judge(settings)
    assert (check.status, check.detail) == (
        "ok",
        "fake-model on the same-claim question: able to judge: 16 of 16 right (100%),"
        ' "yes" to 8 of 16 (needs 85% right and under 90% one way)',
    )
    # Doctor keeps what it found: the gateway trusts it without trying again.
    async with gateway(settings) as gw:
        found = await gw.parts.store.calibration("fake-model", SAME_CLAIM.kind)
        assert found is not None and found.verdict == "able"

    fake_llm.judge = DOWN
    check = await check_judge(settings)
    assert (check.status, check.name) == ("fail", "same-claim judge")
    assert "could not be asked" in check.detail


async def test_a_held_candidate_is_asked_with_backoff_then_goes_to_a_person(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    now = [time.time() + 600]  # after every rating the test makes (stored at the real time)
    async with gateway(settings, lambda: now[0]) as gw:
        (first,) = await rejected(gw, fake_llm, VERIFY)
        fake_llm.judge = calibrated(lambda body: "no JSON here")
        questions = len(fake_llm.same_claim_requests)
        run = await proposed_again(gw, fake_llm, REWORDED)
        assert [c["decision"] for c in run["checks"]] == ["held"]
        synthesis_calls = len(fake_llm.requests)
        await console_sign_in(gw.client)
        page = await (await gw.client.get("/admin/runs")).text()
        assert "Held back" in page and "account-verification" in page
        assert "(asked 1 of 4 times; next try" in page
        print_summary(RunSummary.model_validate(run))
        out = capsys.readouterr().out
        assert "held account-verification: the model's answer is not the same-claim JSON" in out
        assert "(asked 1 of 4 times; next try " in out
        assert "judge: fake-model on the same-claim question: able to judge: 16 of 16" in out
        # Three days of hourly passes with nothing new: asked at the next pass, 4 hours
        # later, a day after that; then a person decides. Four questions in all.
        decided: list[tuple[int, dict[str, Any]]] = []
        for _ in range(72):
            now[0] += 3600
            done = await gw.synthesize()
            decided += [(done["run_id"], p) for p in done["proposed"]]
            if done["checks"]:
                assert done["checks"][0]["decision"] in ("held", "undecided")
        assert len(fake_llm.same_claim_requests) - questions == 4
        assert len(fake_llm.requests) == synthesis_calls  # nothing new: no synthesis call
        ((run_id, made),) = decided
        assert made["name"] == "account-verification"
        _, stored = await gw.call("GET", f"/proposals/{made['id']}")
        assert stored["possibly_same"][0] == f"rejected #{first} verify-identity"
        _, last = await gw.call("GET", f"/runs/{run_id}")
        (check,) = last["same_claim_checks"]
        assert check["decision"] == "undecided"
        assert check["reason"].startswith("no usable answer after 4 questions")
        assert (await gw.synthesize())["held"] == []


async def test_serve_calibrates_the_judge_in_the_background_after_start_up(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(
        make_settings, fake_llm, synthesis_interval_minutes=600, llm_same_claim_model="judge-model"
    )
    app = build_app(settings, channels=[], watch=True)  # as serve builds it
    async with TestClient(TestServer(app)) as client:
        await client.get("/healthz")  # the look waits for the first answer
        assert await asyncio.wait_for(app[MODEL_LOOK], 20) is True
        found = await app[PARTS].store.calibration("judge-model", SAME_CLAIM.kind)
        assert found is not None and found.verdict == "able"
        assert len(calibration_requests(fake_llm)) == len(builtin_pairs())
