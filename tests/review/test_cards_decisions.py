"""One tap decides: admins only, signed buttons only, the first decision wins everywhere."""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import AsyncIterator, Callable

import pytest

from gateway.config import Settings
from tests.cards_support import (
    ALICE,
    BOB,
    LINE_ADMIN,
    LINE_OTHER,
    MALLORY,
    PUSH,
    Rig,
    fakes,
    postbacks,
    rig_settings,
    running,
)
from tests.fakes.line_api import text_event
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import make_text_update


@pytest.fixture
async def rig(make_settings: Callable[..., Settings], fake_llm: FakeOpenAI) -> AsyncIterator[Rig]:
    async with fakes() as (telegram, line):
        settings = rig_settings(make_settings, fake_llm, telegram, line)
        async with running(settings, telegram, line, fake_llm) as running_rig:
            yield running_rig


async def status_of(rig: Rig, pid: int) -> dict[str, object]:
    code, body = await rig.api("GET", "/proposals")
    assert code == 200
    return next(p for p in body if p["id"] == pid)


def line_notices(rig: Rig) -> list[str]:
    return rig.line.delivered_texts(LINE_ADMIN)


async def test_a_non_admin_press_changes_nothing_and_is_logged(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    pid = await rig.propose()
    (card,) = rig.cards_in(ALICE)
    with caplog.at_level(logging.WARNING):
        await rig.press(card, "Approve", user_id=MALLORY)
        await rig.postback(postbacks(rig.line_cards()[0])["Reject"], user_id=LINE_OTHER)
    assert "not allowed" in rig.acks()[-1].lower()
    assert "not allowed" in rig.line.delivered_texts(LINE_OTHER)[-1].lower()
    assert (await status_of(rig, pid))["status"] == "pending"
    assert rig.telegram.calls_of("editMessageText") == []
    assert rig.cards_in(ALICE)[0]["reply_markup"] == card["reply_markup"]
    assert f"telegram user {MALLORY}" in caplog.text and f"LINE user {LINE_OTHER}" in caplog.text


async def test_forged_or_foreign_button_data_is_refused(rig: Rig) -> None:
    pid = await rig.propose()
    (card,) = rig.cards_in(ALICE)
    real = card["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
    forged = [f"pa:{pid}:AAAAAAAAAAAA", real.replace("pa:", "pr:"), f"pa:{pid + 1}:{real[-12:]}"]
    for data in forged:
        await rig.press(card, "Approve", user_id=ALICE, data=data)
        assert rig.acks()[-1] == "This button is not valid."
    # A Telegram-signed button is no LINE button, and the reverse.
    await rig.postback(real)
    assert rig.line.delivered_texts(LINE_ADMIN)[-1] == "This button is not valid."
    await rig.press(card, "Approve", user_id=ALICE, data=postbacks(rig.line_cards()[0])["Approve"])
    assert rig.acks()[-1] == "This button is not valid."
    assert (await status_of(rig, pid))["status"] == "pending"
    assert rig.telegram.calls_of("editMessageText") == []


async def test_a_telegram_reject_edits_every_copy_notifies_line_and_keeps_the_reason(
    rig: Rig,
) -> None:
    pid = await rig.propose()
    (alices,) = rig.cards_in(ALICE)
    bobs = copy.deepcopy(rig.cards_in(BOB)[0])  # what Bob's phone shows until it is edited

    await rig.press(alices, "Reject", user_id=ALICE)
    assert rig.acks()[-1] == f"❌ Rejected proposal #{pid} (chat-brevity)."
    for admin in (ALICE, BOB):
        (shown,) = rig.cards_in(admin)
        assert "reply_markup" not in shown  # the buttons are gone
        assert "❌ Rejected by Alice (@alice) at " in shown["text"]
    assert "❌ Rejected by Alice (@alice) at " in line_notices(rig)[-1]
    assert f"Proposal #{pid}" in line_notices(rig)[-1]

    prompt = rig.telegram.calls_of("sendMessage")[-1]
    assert prompt.params["reply_markup"]["force_reply"] is True
    assert prompt.params["text"].startswith(f"Why reject proposal #{pid}")
    asked = rig.telegram.message(ALICE, max(m for c, m in rig.telegram.messages if c == ALICE))
    await rig.post_telegram(
        make_text_update(
            20, "It repeats writing-for-chat.", chat_id=ALICE, user_id=ALICE, reply_to_message=asked
        )
    )
    await rig.idle()
    assert rig.telegram.sent_texts(ALICE)[-1] == "Thanks, the reason is stored with the rejection."
    assert rig.llm.requests[-1]["response_format"]["type"] == "json_schema"  # no chat turn

    listed = await status_of(rig, pid)
    assert (listed["status"], listed["reason"]) == ("rejected", "It repeats writing-for-chat.")
    assert listed["decided_by"] == f"telegram:{ALICE}"
    (tombstone,) = await rig.parts.store.rejections()
    assert tombstone.reason == "It repeats writing-for-chat."
    for admin in (ALICE, BOB):
        (shown,) = rig.cards_in(admin)
        assert "❌ Rejected by Alice (@alice): It repeats writing-for-chat." in shown["text"]
    assert line_notices(rig)[-1].endswith(
        "Rejected by Alice (@alice): It repeats writing-for-chat."
    )

    # Bob's phone still showed the buttons: his late tap says who decided and changes nothing.
    await rig.press(bobs, "Approve", user_id=BOB)
    assert rig.acks()[-1].startswith("Already rejected by Alice (@alice) at ")
    assert (await status_of(rig, pid))["status"] == "rejected"
    assert not (rig.parts.settings.skills_dir / "chat-brevity").exists()


async def test_double_taps_and_two_admins_at_once_decide_exactly_once(rig: Rig) -> None:
    pid = await rig.propose()
    (alices,) = rig.cards_in(ALICE)
    (bobs,) = rig.cards_in(BOB)
    await asyncio.gather(
        rig.press(alices, "Approve", user_id=ALICE),
        rig.press(alices, "Approve", user_id=ALICE),
        rig.press(bobs, "Approve", user_id=BOB),
    )
    acks = rig.acks()
    assert sorted(a.split(" by ")[0] for a in acks) == [
        "Already approved",
        "Already approved",
        "✅ Approved: chat-brevity is live now.",
    ]
    listed = await status_of(rig, pid)
    assert listed["status"] == "approved"
    assert listed["decided_by"] in (f"telegram:{ALICE}", f"telegram:{BOB}")
    notices = [t for t in line_notices(rig) if "Approved by" in t]
    assert len(notices) == 1  # the LINE admin hears about it once


async def test_an_approve_through_a_line_postback_makes_the_skill_live(rig: Rig) -> None:
    pid = await rig.propose()
    pushes = len(rig.line.calls_to(PUSH))
    await rig.postback(postbacks(rig.line_cards()[0])["Approve"])
    assert line_notices(rig)[-1] == "✅ Approved: chat-brevity is live now."

    code, skills = await rig.api("GET", "/skills")
    assert code == 200
    row = {s["name"]: s for s in skills}["chat-brevity"]
    assert row["enabled"] and row["review_status"] == "approved"
    assert row["last_approved"]["by"] == f"line:{LINE_ADMIN}"
    assert rig.parts.catalog.load("chat-brevity") is not None
    for admin in (ALICE, BOB):
        (shown,) = rig.cards_in(admin)
        assert "reply_markup" not in shown
        assert "✅ Approved by User 111111 at " in shown["text"]  # the LINE profile's name
    assert len(rig.line.calls_to(PUSH)) == pushes  # the LINE admin was answered, not notified
    assert (await status_of(rig, pid))["decided_by"] == f"line:{LINE_ADMIN}"


async def test_after_a_line_reject_the_next_message_is_the_reason_or_skip_leaves_none(
    rig: Rig,
) -> None:
    first = await rig.propose()
    await rig.postback(postbacks(rig.line_cards()[0])["Reject"])
    ask = rig.line.delivered_messages(LINE_ADMIN)[-1]
    assert ask["text"].endswith("Send the reason in your next message, or tap Skip.")
    (skip,) = [i["action"] for i in ask["quickReply"]["items"]]
    assert skip["label"] == "Skip" and skip["data"].startswith(f"ps:{first}:")
    answered = len(rig.llm.requests)
    token = rig.line.issue_reply_token(to=LINE_ADMIN)
    await rig.post_line(text_event("Too close to writing-for-chat.", reply_token=token))
    assert line_notices(rig)[-1] == "Thanks, the reason is stored with the rejection."
    assert len(rig.llm.requests) == answered  # the reason was no question for the model
    assert (await status_of(rig, first))["reason"] == "Too close to writing-for-chat."
    (shown,) = rig.cards_in(ALICE)
    assert "Rejected by User 111111: Too close to writing-for-chat." in shown["text"]

    second = await rig.propose(
        "unit-conversions",
        description="Convert imperial units when a user mentions miles, pounds or inches.",
        content="# Units\n\nGive metric values next to imperial ones.",
    )
    await rig.postback(postbacks(rig.line_cards()[-1])["Reject"])
    ask = rig.line.delivered_messages(LINE_ADMIN)[-1]
    await rig.postback(ask["quickReply"]["items"][0]["action"]["data"])
    assert line_notices(rig)[-1] == "Okay, rejected without a reason."
    token = rig.line.issue_reply_token(to=LINE_ADMIN)
    await rig.post_line(text_event("What is 3 miles in km?", reply_token=token))
    assert rig.llm.requests[-1]["messages"][-1]["content"] == "What is 3 miles in km?"
    assert (await status_of(rig, second))["reason"] is None


async def test_full_diff_comes_as_a_document_in_telegram_and_as_texts_in_line(rig: Rig) -> None:
    pid = await rig.propose()
    (card,) = rig.cards_in(ALICE)
    await rig.press(card, "Full diff", user_id=ALICE)
    (document,) = rig.telegram.calls_of("sendDocument")
    upload = document.files["document"]
    assert upload.filename == f"proposal-{pid}-chat-brevity.diff"
    assert b"+Answer in at most three short sentences." in upload.content
    assert b"+++ chat-brevity/SKILL.md.proposed" in upload.content

    await rig.postback(postbacks(rig.line_cards()[0])["Full diff"])
    assert "+Answer in at most three short sentences." in line_notices(rig)[-1]
    assert (await status_of(rig, pid))["status"] == "pending"
