"""A same-claim judge unable to judge is told to the chat admins once, and each card it could
not judge says "possibly the same as …; decide yourself" with the nearest known claims."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from gateway.config import Settings
from tests.cards_support import ALICE, BOB, Rig, fakes, rig_settings, running
from tests.fakes.openai_server import FakeOpenAI, calibrated, same_claim_answer
from tests.synthesis_support import answer, proposal, seed_session


@pytest.fixture
async def rig(make_settings: Callable[..., Settings], fake_llm: FakeOpenAI) -> AsyncIterator[Rig]:
    async with fakes() as (telegram, line):
        settings = rig_settings(make_settings, fake_llm, telegram, line)
        async with running(settings, telegram, line, fake_llm) as running_rig:
            yield running_rig


def judge_notices(rig: Rig, chat_id: int) -> list[str]:
    return [
        str(m["text"])
        for (chat, _), m in sorted(rig.telegram.messages.items())
        if chat == chat_id and str(m.get("text", "")).startswith("⚠️ The model")
    ]


async def synthesize(rig: Rig, *drafts: dict[str, Any]) -> dict[str, Any]:
    await seed_session(rig.parts.store)
    rig.llm.reply(answer(*drafts))
    status, run = await rig.api("POST", "/synthesize")
    assert status == 200 and run["status"] == "ok", run
    await rig.idle()
    return dict(run)


async def test_an_unable_judge_is_told_once_and_its_cards_ask_the_admin_to_decide(
    rig: Rig,
) -> None:
    rig.llm.judge = lambda body: same_claim_answer(1, "alike")
    first = await rig.propose("chat-brevity")  # compared with the bundled skills: undecided
    assert (await rig.api("POST", f"/proposals/{first}/reject", {"reason": "no"}))[0] == 200
    run = await synthesize(
        rig, proposal("short-replies", content="# Short\n\nAt most two sentences an answer.")
    )
    assert len(run["proposed"]) == 1, json.dumps(run)
    (made,) = run["proposed"]
    for admin in (ALICE, BOB):
        (notice,) = judge_notices(rig, admin)
        assert "fake-model cannot judge whether a new skill repeats a known one" in notice
        assert "8/16 right" in notice and "LLM_SAME_CLAIM_MODEL" in notice
        (card,) = [c for c in rig.cards_in(admin) if f"Proposal #{made['id']}" in c["text"]]
        assert f"possibly the same as rejected #{first} chat-brevity" in card["text"]
        assert "the model cannot judge this — decide yourself" in card["text"]

    # Another pass, another candidate: no second notice.
    await synthesize(rig, proposal("terse-chat", content="# Terse\n\nNo more than 30 words."))
    assert [len(judge_notices(rig, a)) for a in (ALICE, BOB)] == [1, 1]


async def test_the_onboard_model_is_told_as_such_with_what_to_set_instead(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with fakes() as (telegram, line):
        settings = rig_settings(make_settings, fake_llm, telegram, line)
        # As `serve` has it once the on-board model's server is up (the fake stands in).
        onboard = settings.model_copy(update={"llm_local_model": "smollm2"})
        async with running(onboard, telegram, line, fake_llm) as rig:
            rig.llm.judge = calibrated(lambda body: same_claim_answer(0, "different"))
            await rig.propose("chat-brevity")  # compared with the bundled skills: undecided
            for admin in (ALICE, BOB):
                (notice,) = judge_notices(rig, admin)
                assert "fake-model is the on-board model, for trying the gateway" in notice
                assert "16/16 right" in notice
                assert "unset LLM_LOCAL_MODEL and set LLM_BASE_URL and LLM_MODEL" in notice
