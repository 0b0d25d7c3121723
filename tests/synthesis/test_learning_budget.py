"""Learning on its own model and budget: synthesis and its judge use LLM_LEARNING_MODEL
(LLM_SAME_CLAIM_MODEL still overrides the judge); once the day's learning tokens reach
SKILLGATE_LEARNING_DAILY_TOKENS a pass stops with a record, the admins are told once that day
and no learning call is made until the next UTC day; usage shows learning apart from chats."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime

from gateway.config import Settings
from tests.cards_support import ALICE, BOB, LINE_ADMIN, MALLORY, Rig, fakes, rig_settings, running
from tests.console_support import sign_in
from tests.fakes.openai_server import FakeOpenAI, calibrated
from tests.fakes.telegram_api import make_text_update
from tests.serve_process import skillgate
from tests.synthesis_support import answer, gateway, proposal, seed_session, synth_settings

NOTICE = "⏸️ Learning stopped for today"


async def test_synthesis_and_its_judge_use_the_learning_model_and_chats_keep_llm_model(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.models = ["fake-model", "learn-model"]
    settings = synth_settings(make_settings, fake_llm, llm_learning_model="learn-model")
    async with gateway(settings) as gw:
        assert gw.parts.agent.llm.model == "fake-model"
        session = await gw.seed()
        # A candidate like the bundled brevity skill: the same-claim question is asked.
        fake_llm.reply(answer(proposal("chat-brevity", based_on=[session])))
        run = await gw.synthesize()
        assert run["status"] == "ok" and run["model"] == "learn-model", run
        assert [r["model"] for r in fake_llm.requests] == ["learn-model"]
        assert fake_llm.same_claim_requests, "the candidate was never judged"
        assert {r["model"] for r in fake_llm.same_claim_requests} == {"learn-model"}
        status, runs = await gw.call("GET", "/runs")
        assert status == 200 and runs[0]["model"] == "learn-model"


async def test_the_same_claim_model_still_overrides_the_learning_model_for_the_judge(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.models = ["fake-model", "learn-model", "judge-model"]
    settings = synth_settings(
        make_settings,
        fake_llm,
        llm_learning_model="learn-model",
        llm_same_claim_model="judge-model",
    )
    async with gateway(settings) as gw:
        session = await gw.seed()
        fake_llm.reply(answer(proposal("chat-brevity", based_on=[session])))
        run = await gw.synthesize()
        assert run["status"] == "ok", run
        assert [r["model"] for r in fake_llm.requests] == ["learn-model"]
        assert fake_llm.same_claim_requests
        assert {r["model"] for r in fake_llm.same_claim_requests} == {"judge-model"}


def notices(rig: Rig, chat_id: int) -> list[str]:
    return [t for t in rig.telegram.sent_texts(chat_id) if t.startswith(NOTICE)]


async def pass_with(rig: Rig, name: str) -> dict[str, object]:
    session = await seed_session(rig.parts.store)
    rig.llm.reply(answer(proposal(name, based_on=[session], content=f"# {name}\n\nBe brief.")))
    status, run = await rig.api("POST", "/synthesize")
    assert status == 200, run
    await rig.idle()
    return dict(run)


async def test_the_budget_reached_stops_learning_for_the_day_with_a_record_and_one_notice(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with fakes() as (telegram, line):
        settings = rig_settings(make_settings, fake_llm, telegram, line, learning_daily_tokens=1)
        async with running(settings, telegram, line, fake_llm) as rig:
            # A chat answer: its tokens are the chats', never the learning budget's.
            await rig.post_telegram(make_text_update(90_001, "hello", chat_id=MALLORY))
            await rig.idle()
            first = await pass_with(rig, "terse-replies")
            assert first["status"] == "ok" and first["stopped"] is None, first
            asked = len(rig.llm.requests) + len(rig.llm.same_claim_requests)

            second = await pass_with(rig, "short-chat")
            assert second["status"] == "ok" and second["error"] is None, second
            assert str(second["stopped"]).startswith("learning budget reached: "), second
            assert "SKILLGATE_LEARNING_DAILY_TOKENS" in str(second["stopped"])
            assert second["proposed"] == [] and second["batches"] == 0
            third = await pass_with(rig, "brief-chat")
            assert str(third["stopped"]).startswith("learning budget reached")
            # No learning call after the budget was reached.
            assert len(rig.llm.requests) + len(rig.llm.same_claim_requests) == asked

            # One notice per admin that day, through the admins' notice path.
            for admin in (ALICE, BOB):
                (told,) = notices(rig, admin)
                assert "daily budget of 1" in told and "00:00 UTC" in told
            assert [t for t in line.delivered_texts(LINE_ADMIN) if t.startswith(NOTICE)]

            # The record: runs API, run API, the console's runs and run pages.
            status, runs = await rig.api("GET", "/runs")
            assert status == 200
            by_id = {r["id"]: r for r in runs}
            assert by_id[second["run_id"]]["stopped"] == second["stopped"]
            assert by_id[first["run_id"]]["stopped"] is None
            status, one = await rig.api("GET", f"/runs/{third['run_id']}")
            assert status == 200 and one["stopped"].startswith("learning budget reached")
            await sign_in(rig.client)
            page = await (await rig.client.get("/admin/runs")).text()
            assert "learning budget reached" in page
            page = await (await rig.client.get(f"/admin/runs/{second['run_id']}")).text()
            assert 'id="run-stopped"' in page and "learning budget reached" in page

            # Usage: learning by day, apart from the chats' answers.
            learned = int(first["prompt_tokens"])  # type: ignore[call-overload]
            status, usage = await rig.api("GET", "/usage?days=2")
            assert status == 200
            today = datetime.now(UTC).date().isoformat()
            (day,) = usage["learning_days"]
            assert day["day"] == today and day["answers"] == 3 and day["tokens"] > learned > 0
            assert usage["answers"]["answers"] == 1 and usage["answers"]["tokens"] > 0
            (row,) = [d for d in usage["days"] if d["day"] == today]
            assert row["synthesis"]["tokens"] == day["tokens"]
            assert row["answers"]["tokens"] == usage["answers"]["tokens"]
            before = len(rig.telegram.sent_texts(ALICE))
            await rig.post_telegram(make_text_update(90_002, "/usage", chat_id=ALICE))
            await rig.idle()
            (said,) = rig.telegram.sent_texts(ALICE)[before:]
            assert "Learning tokens per day (synthesis and judging, apart from chats):" in said
            assert f"  {today}: {day['tokens']:,} tokens" in said
            page = await (await rig.client.get("/admin/usage?days=2")).text()
            assert "learning tokens" in page
    # The terminal's pass says so too (the sessions of the stopped passes are still unread).
    env = {
        "SKILLGATE_DATA_DIR": str(settings.data_dir),
        "LLM_BASE_URL": fake_llm.base_url,
        "LLM_MODEL": "fake-model",
        "SKILLGATE_LEARNING_DAILY_TOKENS": "1",
    }
    calls = len(fake_llm.requests)
    code, out, err = await skillgate("synthesize", env=env)
    assert code == 0, err
    assert "stopped: learning budget reached" in out and len(fake_llm.requests) == calls
    code, out, _ = await skillgate(
        "usage", "--days", "2", env={"SKILLGATE_DATA_DIR": str(settings.data_dir)}
    )
    assert code == 0, out
    assert f"  {today}: {day['tokens']:,} tokens" in out
    code, out, _ = await skillgate(
        "usage", "--days", "2", "--json", env={"SKILLGATE_DATA_DIR": str(settings.data_dir)}
    )
    assert json.loads(out)["learning_days"][0]["tokens"] == day["tokens"]


async def test_learning_resumes_the_next_utc_day(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    now = [datetime(2026, 3, 1, 23, 0, tzinfo=UTC).timestamp()]
    settings = synth_settings(make_settings, fake_llm, learning_daily_tokens=1)
    async with gateway(settings, clock=lambda: now[0]) as gw:
        for name in ("terse-replies", "short-chat"):
            session = await gw.seed(at=now[0] - 600)
            fake_llm.reply(answer(proposal(name, based_on=[session], content="# T\n\nBrief.")))
            run = await gw.synthesize()
        assert str(run["stopped"]).startswith("learning budget reached"), run
        calls = len(fake_llm.requests)
        now[0] += 2 * 3600  # past 00:00 UTC: a new day, a new budget
        run = await gw.synthesize()
        assert run["status"] == "ok" and run["stopped"] is None, run
        assert len(fake_llm.requests) == calls + 1


async def test_a_held_candidate_is_not_asked_again_once_the_budget_is_reached(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    fake_llm.judge = calibrated(lambda body: "I think they are quite similar.")
    async with gateway(settings) as gw:
        session = await gw.seed()
        fake_llm.reply(answer(proposal("chat-brevity", based_on=[session])))
        run = await gw.synthesize()
        assert [h["name"] for h in run["held"]] == ["chat-brevity"], run

    # Due at the next pass, but the day's learning tokens already exceed the budget.
    budgeted = synth_settings(make_settings, fake_llm, learning_daily_tokens=1)
    questions = len(fake_llm.same_claim_requests)
    async with gateway(budgeted) as gw:
        run = await gw.synthesize()
        assert run["status"] == "ok" and str(run["stopped"]).startswith("learning budget"), run
        assert [h["name"] for h in run["held"]] == ["chat-brevity"]
        assert run["held"][0]["tries"] == 1
    assert len(fake_llm.same_claim_requests) == questions


def test_empty_learning_and_judge_models_mean_unset(
    make_settings: Callable[..., Settings],
) -> None:
    # As .env.example ships them: empty falls back to LLM_MODEL, never a model named "".
    settings = make_settings(llm_learning_model="", llm_same_claim_model="")
    assert settings.llm_learning_model is None and settings.llm_same_claim_model is None


async def test_the_budget_reached_between_held_candidates_keeps_each_ones_place(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    fake_llm.judge = calibrated(lambda body: "I think they are quite similar.")
    async with gateway(settings) as gw:
        session = await gw.seed()
        fake_llm.reply(
            answer(
                proposal("chat-brevity", based_on=[session]),
                proposal("reply-length", based_on=[session], content="# Length\n\nBe brief."),
            )
        )
        run = await gw.synthesize()
        assert sorted(h["name"] for h in run["held"]) == ["chat-brevity", "reply-length"], run
        status, runs = await gw.call("GET", "/runs")
        assert status == 200
        spent = sum(r["prompt_tokens"] + r["completion_tokens"] for r in runs)

    # Room for one more question today, not two.
    budgeted = synth_settings(make_settings, fake_llm, learning_daily_tokens=spent + 1)
    questions = len(fake_llm.same_claim_requests)
    async with gateway(budgeted) as gw:
        run = await gw.synthesize()
        assert str(run["stopped"]).startswith("learning budget reached"), run
        assert len(fake_llm.same_claim_requests) == questions + 1
        tries = sorted(h["tries"] for h in run["held"])
        assert tries == [1, 2], run["held"]  # the one asked again, the one that waits
