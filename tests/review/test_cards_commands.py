"""/proposals, /skills and /synthesize for admins in Telegram and LINE; "not allowed" for others."""

from __future__ import annotations

import copy
import json
import time
from collections.abc import AsyncIterator, Callable

import pytest

from gateway.config import Settings
from gateway.ops.webhooks import run_set_webhook
from gateway.store import store_for
from tests.cards_support import (
    ALICE,
    BOB,
    LINE_ADMIN,
    LINE_OTHER,
    MALLORY,
    REPLY,
    Rig,
    fakes,
    flex_texts,
    postbacks,
    rig_settings,
    running,
)
from tests.fakes.line_api import text_event
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegramAPI, make_text_update
from tests.synthesis_support import answer, proposal, seed_session

_ids = iter(range(500, 100_000))


@pytest.fixture
async def rig(make_settings: Callable[..., Settings], fake_llm: FakeOpenAI) -> AsyncIterator[Rig]:
    async with fakes() as (telegram, line):
        settings = rig_settings(make_settings, fake_llm, telegram, line)
        async with running(settings, telegram, line, fake_llm) as running_rig:
            yield running_rig


async def tell(rig: Rig, user_id: int, text: str) -> list[str]:
    """A private Telegram message from a user; the texts the bot sent back to them."""
    before = len(rig.telegram.sent_texts(user_id))
    await rig.post_telegram(make_text_update(next(_ids), text, chat_id=user_id, user_id=user_id))
    await rig.idle()
    return rig.telegram.sent_texts(user_id)[before:]


async def say_line(rig: Rig, user_id: str, text: str) -> list[dict[str, object]]:
    """A LINE text from a user; the messages the bot delivered back."""
    before = len(rig.line.delivered_messages(user_id))
    token = rig.line.issue_reply_token(to=user_id)
    await rig.post_line(text_event(text, user_id=user_id, reply_token=token))
    return rig.line.delivered_messages(user_id)[before:]


async def test_non_admins_are_not_allowed_to_use_review_commands(rig: Rig) -> None:
    await rig.propose()
    for command in ("/proposals", "/skills", "/synthesize"):
        (said,) = await tell(rig, MALLORY, command)
        assert "not allowed" in said.lower()
        (sent,) = await say_line(rig, LINE_OTHER, command)
        assert "not allowed" in str(sent["text"]).lower()
    assert len(rig.llm.requests) == 1  # the one synthesis pass of `propose`; no turn, no pass


async def test_proposals_shows_each_pending_card_with_buttons_and_that_copy_follows_decisions(
    rig: Rig,
) -> None:
    assert await tell(rig, ALICE, "/proposals") == ["No proposals are waiting for review."]
    pid = await rig.propose()
    older = copy.deepcopy(rig.cards_in(ALICE)[0])
    await tell(rig, ALICE, "/proposals")
    first, again = rig.cards_in(ALICE)
    assert again["message_id"] > first["message_id"]
    assert "❌ Reject" in str(again["reply_markup"])

    await rig.press(rig.cards_in(BOB)[0], "Approve", user_id=BOB)
    again = rig.cards_in(ALICE)[1]
    assert "reply_markup" not in again and "✅ Approved by User1002 at " in again["text"]
    # The copy shown earlier is no longer followed; a tap on it says who decided and updates it.
    await rig.press(older, "Reject", user_id=ALICE)
    assert rig.acks()[-1].startswith("Already approved by User1002 at ")
    assert "reply_markup" not in rig.cards_in(ALICE)[0]
    assert (await rig.api("GET", f"/proposals/{pid}"))[1]["status"] == "approved"

    (sent,) = await say_line(rig, LINE_ADMIN, "/proposals")
    assert sent["text"] == "No proposals are waiting for review."
    second = await rig.propose(
        "unit-conversions",
        description="Convert imperial units when a user mentions miles, pounds or inches.",
        content="# Units\n\nGive metric values next to imperial ones.",
    )
    (card,) = await say_line(rig, LINE_ADMIN, "/proposals")
    assert card["type"] == "flex" and f"Proposal #{second}" in flex_texts(card)
    assert list(postbacks(card)) == ["Approve", "Reject", "Full diff"]
    assert rig.line.calls_to(REPLY)[-1].body["messages"][0]["type"] == "flex"  # by reply token


async def test_skills_lists_source_status_and_thumbs_up_rate(rig: Rig) -> None:
    store = rig.parts.store
    for rating in (1, 1, -1):
        # Skills are measured from when their current text took effect: seed answers after it.
        await seed_session(
            store, loaded=["writing-for-chat"], rating=rating, comment=None, at=time.time()
        )
    (said,) = await tell(rig, ALICE, "/skills")
    assert said.startswith("Skills (3):")
    assert "• writing-for-chat — bundled, enabled, live; 3 uses, 👍 2 👎 1, rate 67% (" in said
    assert "• summarize-text — bundled, enabled, live; 0 uses, 👍 0 👎 0, rate -" in said
    (sent,) = await say_line(rig, LINE_ADMIN, "/skills")
    assert "3 uses, 👍 2 👎 1, rate 67% (" in str(sent["text"])


async def test_synthesize_runs_a_pass_now_and_its_cards_follow(rig: Rig) -> None:
    session = await seed_session(rig.parts.store, chat="chat-x")
    rig.llm.reply(answer(proposal("chat-brevity", based_on=[session])))
    said = [t for t in await tell(rig, ALICE, "/synthesize") if "<b>Proposal #" not in t]
    assert said[0] == "Running a synthesis pass now…"
    assert said[1].endswith(
        "done: 1 proposed, 0 suppressed, 0 refused from 1 session. Their cards go to every admin."
    )
    assert len(rig.cards_in(ALICE)) == len(rig.cards_in(BOB)) == len(rig.line_cards()) == 1

    (sent,) = await say_line(rig, LINE_ADMIN, "/synthesize")
    assert str(sent["text"]).endswith("0 proposed, 0 suppressed, 0 refused from 0 sessions.")


async def test_a_thumbs_down_comment_and_a_reject_reason_never_take_each_others_answer(
    rig: Rig,
) -> None:
    pid = await rig.propose()
    # LINE: a 👎 asks what went wrong; the admin's next text is that comment, not a reason.
    (answered,) = await say_line(rig, LINE_ADMIN, "How do I word a reminder?")
    down = answered["quickReply"]["items"][1]["action"]["data"]  # type: ignore[index]
    await rig.postback(down)
    await say_line(rig, LINE_ADMIN, "Far too formal.")
    comments = [f["comment"] for f in (await rig.api("GET", "/feedback"))[1]]
    assert "Far too formal." in comments
    assert (await rig.api("GET", f"/proposals/{pid}"))[1]["status"] == "pending"

    # Telegram: the reply to the reason prompt is the reason, and no rating's comment.
    await rig.press(rig.cards_in(ALICE)[0], "Reject", user_id=ALICE)
    prompt = rig.telegram.message(ALICE, max(m for c, m in rig.telegram.messages if c == ALICE))
    update = make_text_update(
        next(_ids), "Not needed.", chat_id=ALICE, user_id=ALICE, reply_to_message=prompt
    )
    await rig.post_telegram(update)
    await rig.idle()
    assert (await rig.api("GET", f"/proposals/{pid}"))[1]["reason"] == "Not needed."
    comments = [f["comment"] for f in (await rig.api("GET", "/feedback"))[1]]
    assert "Not needed." not in comments


def menus(telegram: FakeTelegramAPI) -> dict[str, list[str]]:
    """Command menus the fake holds, by scope ("default", "chat1001", ...)."""
    found = {}
    for (scope, _language), commands in telegram.commands.items():
        parsed = json.loads(scope)
        found[f"{parsed['type']}{parsed.get('chat_id', '')}"] = [c["command"] for c in commands]
    return found


async def test_set_webhook_gives_only_the_admins_a_menu_with_the_review_commands(
    make_settings: Callable[..., Settings], capsys: pytest.CaptureFixture[str]
) -> None:
    async with FakeTelegramAPI() as telegram:
        settings = make_settings(
            public_url="https://bot.example.test",
            telegram_bot_token=telegram.token,
            telegram_webhook_secret="s3cret",
            telegram_api_base_url=telegram.base_url,
            telegram_admin_ids=[ALICE, BOB],
        )
        async with store_for(settings) as store:  # Alice's app is set to Japanese
            await store.user_language_seen("telegram", str(ALICE), "ja", ok=True)
        # Bob never wrote to the bot, so Telegram knows no chat with him yet (the menus of
        # everyone, in four languages, come first).
        telegram.fail_next("setMyCommands", 400, "Bad Request: chat not found", after=5)
        assert await run_set_webhook(settings) == 0
        public = [
            "start",
            "help",
            "new",
            "language",
            "remember",
            "memory",
            "persona",
            "voice",
            "remind",
            "tasks",
            "timezone",
            "forget",
        ]
        assert menus(telegram) == {
            "default": public,
            f"chat{ALICE}": [*public, "proposals", "skills", "synthesize", "reopen", "usage"],
        }
        alice = next(v for (scope, _), v in telegram.commands.items() if str(ALICE) in scope)
        assert alice[-3]["description"] == "スキル合成を今すぐ実行"
        assert alice[-2]["description"].startswith("却下した提案を再審査に戻す")
        assert alice[-1]["description"] == "過去7日間の回答数・トークン・費用"
        out = capsys.readouterr().out
        assert (
            "telegram admin commands: set /proposals, /skills, /synthesize, /reopen, /usage"
            " for 2 admin(s)" in out
        )
        assert f"telegram admin commands: warn admin {BOB}: Chat not found" in out

        assert await run_set_webhook(settings) == 0  # once Bob has written, a rerun fixes it
        assert menus(telegram)[f"chat{BOB}"] == menus(telegram)[f"chat{ALICE}"]
