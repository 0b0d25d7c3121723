"""The whole learning loop with a real model: rated chats in, a screened proposal out, a card.

llama.cpp's server with SmolLM2-135M-Instruct answers the chats, writes the synthesis
answer and, when a known claim is near, answers the same-claim question; nothing is
scripted. Telegram users chat through the real channel against the fake Bot API, rate the
answers 👎 and say why; one synthesis pass must stage a proposal that passed screening,
and the admin's private chat must hold its card with signed Approve and Reject buttons.
Asserted by structure only (statuses, ids, button data), never by the model's words; the
server samples greedily with a fixed seed, so the same run gives the same answers.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from itertools import count
from typing import Any

import pytest

from gateway.config import Settings
from tests.fakes.openai_server import FakeOpenAI, forwarded_text
from tests.fakes.telegram_api import (
    FakeTelegramAPI,
    html_to_plain,
    make_callback_update,
    make_text_update,
)
from tests.real_llama import INSTALL, MODEL_NAME, available, llama_server
from tests.serve_process import free_port
from tests.telegram_harness import ADMIN, Gateway, telegram_gateway

REQUIRED = os.environ.get("SKILLGATE_REQUIRE_REAL_MODEL") == "1"
pytestmark = [
    pytest.mark.real_model,
    pytest.mark.skipif(
        not available() and not REQUIRED,
        reason=f"the real-model wheels are not installed: {INSTALL}",
    ),
]
REVIEWER = 4242
"""The admin whose private chat gets the cards (a Telegram private chat id is the user's id)."""
CHATS = (
    ("How long should I boil an egg?", "give the time in minutes, I only wanted the number"),
    ("How long do I bake bread?", "just tell me the minutes and the oven temperature"),
    ("How long to cook rice?", "too long, I only wanted the cooking time"),
)
BUNDLED = ("summarize-text", "troubleshooting-steps", "writing-for-chat")
_updates = count(1)


@pytest.fixture(scope="module")
def real_server() -> Iterator[str]:
    with llama_server(free_port()) as url:
        yield url


def rated_answer(fake: FakeTelegramAPI, chat_id: int) -> dict[str, Any]:
    """The bot's last message in a chat that carries the 👍/👎 keyboard."""
    rated = [
        m
        for (chat, _), m in sorted(fake.messages.items())
        if chat == chat_id and "inline_keyboard" in (m.get("reply_markup") or {})
    ]
    assert rated, f"chat {chat_id} got no rated answer"
    return rated[-1]


def last_message(fake: FakeTelegramAPI, chat_id: int) -> dict[str, Any]:
    return fake.message(chat_id, max(m for c, m in fake.messages if c == chat_id))


def card_buttons(fake: FakeTelegramAPI, chat_id: int) -> list[list[str]]:
    """The callback data of every button row on messages the bot sent into `chat_id`."""
    rows = []
    for (chat, _), message in sorted(fake.messages.items()):
        keyboard = (message.get("reply_markup") or {}).get("inline_keyboard") or []
        if chat == chat_id:
            rows.extend([b.get("callback_data", "") for b in row] for row in keyboard)
    return rows


async def test_a_real_models_proposal_passes_screening_and_reaches_the_admins_card(
    make_settings: Callable[..., Settings], real_server: str
) -> None:
    async with (
        FakeOpenAI(models=(MODEL_NAME,), upstream=real_server) as real_llm,
        telegram_gateway(
            make_settings,
            real_llm,
            llm_model=MODEL_NAME,
            llm_max_tokens=48,  # the chat answers: short is enough to rate them
            llm_timeout_seconds=120,
            llm_max_retries=0,
            session_idle_minutes=0,  # a session is finished, and evidence, at once
            synthesis_interval_minutes=0,
            synthesis_temperature=0,
            max_proposals_per_run=1,
            max_skill_bytes=1024,
            telegram_admin_ids=str(REVIEWER),
            # The trial before the card: one rated turn, answered again with the proposal and
            # without it, compared by the model itself, declared trusted so that the pairs
            # are judged (SmolLM2 is no judge: calibrated, it is found unable, and the
            # trial says "not measured" without pairs).
            trial_turns_per_side=1,
            trusted_judges=MODEL_NAME,
        ) as gw,
    ):
        for user, (question, comment) in enumerate(CHATS, start=5001):
            await deliver(
                gw, make_text_update(next(_updates), question, chat_id=user, user_id=user)
            )
            answer = rated_answer(gw.fake, user)
            down = answer["reply_markup"]["inline_keyboard"][0][1]["callback_data"]
            press = make_callback_update(
                next(_updates),
                down,
                chat_id=user,
                user_id=user,
                message_id=answer["message_id"],
                message_text=answer["text"],
                reply_markup=answer["reply_markup"],
            )
            await deliver(gw, press)
            asked = last_message(gw.fake, user)  # "What went wrong?", a forced reply
            reply = make_text_update(
                next(_updates), comment, chat_id=user, user_id=user, reply_to_message=asked
            )
            await deliver(gw, reply)
        rows = await gw.feedback()
        assert sorted((r["rating"], bool(r["comment"])) for r in rows) == [(-1, True)] * 3

        # SmolLM2 is no judge of sameness (docs/LEARNING.md): asked about the bundled
        # skills, it named one and the proposal was suppressed. The admin switches them off,
        # so the candidate meets no known claim and the same-claim check has nothing to ask.
        for name in BUNDLED:
            resp = await gw.client.post(f"/admin/api/skills/{name}/disable", headers=ADMIN)
            assert resp.status == 200, await resp.text()
        start = len(real_llm.forwarded)
        resp = await gw.client.post("/admin/api/synthesize", headers=ADMIN)
        assert resp.status == 200, await resp.text()
        run = await resp.json()
        written = [forwarded_text(body) for _, body in real_llm.forwarded[start:]]
        print(json.dumps({"written": written, "run": run}, ensure_ascii=False))  # the record
        assert run["status"] == "ok", run
        staged = [p for p in run["proposed"] if p["status"] == "pending"]
        assert staged, run
        assert [status for status, _ in real_llm.forwarded] == [200] * len(real_llm.forwarded)
        # The synthesis call: the trial's new answers come after it, as chat requests do.
        asked = [r for r in real_llm.requests if "response_format" in r][-1]["response_format"]
        assert asked["type"] == "json_schema"
        draft = asked["json_schema"]["schema"]["properties"]["proposals"]["items"]
        shown = draft["properties"]["based_on"]["items"]["enum"]
        assert len(shown) == len(CHATS)  # the three rated sessions were the evidence
        proposal_id = staged[0]["id"]
        resp = await gw.client.get(f"/admin/api/proposals/{proposal_id}", headers=ADMIN)
        assert resp.status == 200
        made = await resp.json()
        assert made["status"] == "pending" and made["based_on"], made
        assert set(made["based_on"]) <= set(shown), made
        assert gw.parts.admins.cards is not None
        await gw.parts.admins.cards.wait_idle(30)
        buttons = card_buttons(gw.fake, REVIEWER)
        cards = [
            html_to_plain(str(m.get("text", "")))
            for (chat, _), m in sorted(gw.fake.messages.items())
            if chat == REVIEWER and str(m.get("text", "")).startswith(f"<b>Proposal #{proposal_id}")
        ]
    print(json.dumps({"trial": made["trial"]}, ensure_ascii=False))  # the record
    check_trial(made["trial"], cards)

    signed = re.compile(rf"p([ar]):{proposal_id}:[A-Za-z0-9_-]{{12}}")
    actions = {m.group(1) for row in buttons for data in row if (m := signed.fullmatch(data))}
    assert actions == {"a", "r"}, buttons  # Approve and Reject of that proposal, signed


def check_trial(trial: dict[str, Any], cards: list[str]) -> None:
    """The trial ran end to end: its pairs are recorded and agree with its counts, and the
    card shows its lines (the counts, or "not measured" with the reason)."""
    assert trial is not None
    assert trial["verdict"] in ("measured_gain", "no_measured_gain", "regressions", "not_measured")
    pairs = trial["pairs"]
    if trial["verdict"] == "not_measured":
        assert trial["reason"], trial
    else:
        assert pairs, trial
    for pair in pairs:
        assert pair["side"] in ("fixes", "guards") and pair["arm"] in ("with_it", "control")
        assert pair["question"] and pair["before"] and pair["after"]
        assert pair["outcome"] in ("better", "same", "worse", None)
    for side in ("fixes", "guards"):
        for arm in ("with_it", "control"):
            judged = [p["outcome"] for p in pairs if (p["side"], p["arm"]) == (side, arm)]
            counts = trial[side][arm]
            assert [counts["better"], counts["same"], counts["worse"]] == [
                judged.count("better"),
                judged.count("same"),
                judged.count("worse"),
            ]
    # The judge was declared, the sessions were rated 👎: the fixes side was tried on both
    # arms unless the model failed, which the reason then says.
    assert {(p["side"], p["arm"]) for p in pairs} == {
        ("fixes", "with_it"),
        ("fixes", "control"),
    } or (trial["verdict"] == "not_measured" and trial["reason"]), trial
    assert cards, "the admin got no card"
    assert f"🧪 Trial: {' — '.join(trial['lines'])}" in cards[-1], cards[-1]


async def deliver(gw: Gateway, update: dict[str, Any]) -> None:
    """Post an update and wait until it is handled (a real model's answer takes seconds)."""
    resp = await gw.post(update)
    assert resp.status == 200, await resp.text()
    await gw.idle(timeout=120)
