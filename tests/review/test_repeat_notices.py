"""A rejected claim that keeps coming back is told to the admins in chat, where they can reopen it.

One notice per synthesis pass that suppressed repeats of standing rejections (each
rejection named once a day at most; an admin gets a few notices a day at most), in every
admin's private chat on Telegram and LINE, naming each rejection and how often it came
back, with 🔍 (both wordings) and Reopen (the console's reopen, as the admin who pressed).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from gateway.config import Settings
from gateway.review.buttons import CardSigner
from gateway.review.repeats import repeat_button
from tests.cards_support import (
    ALICE,
    BOB,
    LINE_ADMIN,
    MALLORY,
    Rig,
    fakes,
    flex_texts,
    postbacks,
    rig_settings,
    running,
)
from tests.fakes.openai_server import FakeOpenAI
from tests.synthesis_support import answer, gateway, proposal, seed_session

SNAPPY = "# Snappy\n\nOne line per answer, never more."
SNAPPY_WHEN = "Use for every reply to a greeting or a thank-you."


@pytest.fixture
async def rig(make_settings: Callable[..., Settings], fake_llm: FakeOpenAI) -> AsyncIterator[Rig]:
    async with fakes() as (telegram, line):
        settings = rig_settings(make_settings, fake_llm, telegram, line)
        async with running(settings, telegram, line, fake_llm) as running_rig:
            yield running_rig


def notices_in(rig: Rig, chat_id: int) -> list[dict[str, Any]]:
    """Telegram messages in a chat that are repeat notices."""
    return [
        m
        for (chat, _), m in sorted(rig.telegram.messages.items())
        if chat == chat_id and str(m.get("text", "")).startswith("🔁")
    ]


def line_notices(rig: Rig) -> list[dict[str, Any]]:
    return [m for m in rig.line_cards() if flex_texts(m).startswith("🔁")]


async def synthesize(rig: Rig, *drafts: dict[str, Any]) -> dict[str, Any]:
    """One pass over a fresh rated session whose answer holds these drafts."""
    await seed_session(rig.parts.store)
    rig.llm.reply(answer(*drafts))
    status, run = await rig.api("POST", "/synthesize")
    assert status == 200 and run["status"] == "ok", run
    await rig.idle()
    return dict(run)


async def rejected(rig: Rig, name: str, **fields: Any) -> int:
    pid = await rig.propose(name, **fields)
    assert (await rig.api("POST", f"/proposals/{pid}/reject", {"reason": "not wanted"}))[0] == 200
    await rig.idle()
    return pid


async def test_one_notice_per_pass_names_each_rejection_and_reopen_works_from_telegram(
    rig: Rig,
) -> None:
    brevity = await rejected(rig, "chat-brevity")
    snappy = await rejected(rig, "snappy-answers", content=SNAPPY, description=SNAPPY_WHEN)
    assert notices_in(rig, ALICE) == []  # nothing suppressed yet: no notice

    # One pass repeats both rejections (the first one twice, under other names).
    run = await synthesize(
        rig,
        proposal("short-replies"),
        proposal("terse-chat"),
        proposal("one-liners", content=SNAPPY, description=SNAPPY_WHEN),
    )
    assert [s["matched"] for s in run["suppressed"]] == [brevity, brevity, snappy]
    for admin in (ALICE, BOB):
        (notice,) = notices_in(rig, admin)
        assert f"#{brevity} chat-brevity: came back 2 times" in notice["text"]
        assert f"#{snappy} snappy-answers: came back 1 time since" in notice["text"]
        rows = notice["reply_markup"]["inline_keyboard"]
        assert [[b["text"] for b in row] for row in rows] == [
            [f"🔍 #{brevity}", f"↩️ Reopen #{brevity}"],
            [f"🔍 #{snappy}", f"↩️ Reopen #{snappy}"],
        ]
        assert all(len(b["callback_data"].encode()) <= 64 for row in rows for b in row)
    (line_notice,) = line_notices(rig)
    assert f"#{brevity} chat-brevity: came back 2 times" in flex_texts(line_notice)

    notice = notices_in(rig, ALICE)[0]
    # 🔍: the wording that came back beside the rejected one, as a reply in the chat.
    before = len(rig.telegram.sent_texts(ALICE))
    await rig.press(notice, f"🔍 #{snappy}", user_id=ALICE)
    (shown,) = rig.telegram.sent_texts(ALICE)[before:]
    assert shown.startswith(f"🔍 Rejected proposal #{snappy} (snappy-answers)")
    assert "— Rejected —" in shown and "— New, as one-liners —" in shown
    assert shown.count("One line per answer, never more.") == 2

    # Not an admin, forged data, data for a notice that does not exist: nothing changes.
    await rig.press(notice, "Reopen", user_id=MALLORY)
    reopen = next(b for row in notice["reply_markup"]["inline_keyboard"] for b in row)
    forged = reopen["callback_data"][:-1] + ("A" if reopen["callback_data"][-1] != "A" else "B")
    await rig.press(notice, "Reopen", user_id=ALICE, data=forged)
    signer = CardSigner(rig.telegram.token)
    stale = repeat_button(signer, "x", "reopen", 99_999)
    await rig.press(notice, "Reopen", user_id=ALICE, data=f"{stale.action}:{stale.value}")
    assert rig.acks()[-3:] == [
        "Not allowed: only the bot's admins can review proposals.",
        "This button is not valid.",
        "This button is out of date: the notice it belongs to is gone.",
    ]
    assert (await rig.api("GET", f"/proposals/{brevity}"))[1]["status"] == "rejected"

    await rig.press(notice, f"Reopen #{brevity}", user_id=ALICE)
    _, shown_p = await rig.api("GET", f"/proposals/{brevity}")
    assert (shown_p["status"], shown_p["reopened_by"]) == ("pending", f"telegram:{ALICE}")
    assert rig.acks()[-1] == (
        f"↩️ Reopened proposal #{brevity} (chat-brevity): it waits for review again."
    )
    assert [r.proposal_id for r in await rig.parts.store.rejections()] == [snappy]

    # Bob's copy: the rejection is reopened already, and he is told by whom.
    await rig.press(notices_in(rig, BOB)[0], f"Reopen #{brevity}", user_id=BOB)
    said = f"Proposal #{brevity} was already reopened by Alice (@alice) at "
    assert rig.acks()[-1].startswith(said)

    # The standing rejection comes back again the same day: counted, not told again (the
    # next day's notice naming it counts this return too; see the store's tests).
    await synthesize(rig, proposal("brief-lines", content=SNAPPY, description=SNAPPY_WHEN))
    assert len(notices_in(rig, ALICE)) == 1
    assert await rig.parts.store.unsent_repeat_notices(0.0) == []


async def test_repeats_of_pending_proposals_and_live_skills_bring_no_notice(rig: Rig) -> None:
    pid = await rig.propose()
    run = await synthesize(rig, proposal("chat-brevity"), proposal("other-name"))
    assert [s["matched"] for s in run["suppressed"]] == [pid, pid]  # it awaits review
    assert (await rig.api("POST", f"/proposals/{pid}/approve"))[0] == 200
    run = await synthesize(rig, proposal("chat-brevity"))
    assert run["suppressed"] and run["suppressed"][0]["matched"] is None  # the live skill
    assert notices_in(rig, ALICE) == [] and line_notices(rig) == []


async def test_a_line_admin_compares_and_reopens_from_the_notice_in_their_language(
    rig: Rig,
) -> None:
    rig.line.profiles[LINE_ADMIN] = {"displayName": "Somchai", "language": "th"}
    pid = await rejected(rig, "chat-brevity")
    await synthesize(rig, proposal("short-replies", description="Answer briefly in chats."))
    (notice,) = line_notices(rig)
    assert f"#{pid} chat-brevity: กลับมา 1 ครั้งนับตั้งแต่ถูกปฏิเสธ" in flex_texts(notice)
    buttons = postbacks(notice)
    assert set(buttons) == {f"🔍 #{pid}", f"↩️ เปิดใหม่ #{pid}"}
    assert "Synthesis run" in notices_in(rig, ALICE)[0]["text"]  # each admin's own language

    before = len(rig.line.delivered_texts(LINE_ADMIN))
    await rig.postback(buttons[f"🔍 #{pid}"])
    (shown,) = rig.line.delivered_texts(LINE_ADMIN)[before:]
    assert "Answer briefly in chats." in shown and "— ฉบับใหม่ ในชื่อ short-replies —" in shown

    await rig.postback(buttons[f"↩️ เปิดใหม่ #{pid}"], user_id="U" + "9" * 32)  # not an admin
    assert (await rig.api("GET", f"/proposals/{pid}"))[1]["status"] == "rejected"
    await rig.postback(buttons[f"↩️ เปิดใหม่ #{pid}"])
    _, shown_p = await rig.api("GET", f"/proposals/{pid}")
    assert (shown_p["status"], shown_p["reopened_by"]) == ("pending", f"line:{LINE_ADMIN}")
    assert any(
        t.startswith("↩️") and f"#{pid}" in t for t in rig.line.delivered_texts(LINE_ADMIN)[-3:]
    )


async def test_a_notice_a_crash_left_unsent_goes_out_at_the_next_start_once_and_still_works(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with fakes() as (telegram, line):
        settings = rig_settings(make_settings, fake_llm, telegram, line)
        async with running(settings, telegram, line, fake_llm) as rig:
            pid = await rejected(rig, "chat-brevity")
        # A pass in a process without the chat clients: the notice is written, not sent.
        async with gateway(settings) as gw:
            await gw.seed()
            fake_llm.reply(answer(proposal("short-replies")))
            assert [s["matched"] for s in (await gw.synthesize())["suppressed"]] == [pid]
        assert telegram.sent_texts(ALICE)[-1:] != [] and not any(
            t.startswith("🔁") for t in telegram.sent_texts(ALICE)
        )
        async with running(settings, telegram, line, fake_llm) as rig:
            (notice,) = notices_in(rig, ALICE)
            assert len(notices_in(rig, BOB)) == 1 and len(line_notices(rig)) == 1
        # Another restart sends nothing again, and the buttons sent before it still work.
        async with running(settings, telegram, line, fake_llm) as rig:
            assert len(notices_in(rig, ALICE)) == 1 and len(line_notices(rig)) == 1
            await rig.press(notice, "Reopen", user_id=ALICE)
            _, shown = await rig.api("GET", f"/proposals/{pid}")
            assert (shown["status"], shown["reopened_by"]) == ("pending", f"telegram:{ALICE}")


async def test_an_admin_gets_at_most_the_days_cap_of_notices_the_rest_wait(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with fakes() as (telegram, line):
        settings = rig_settings(make_settings, fake_llm, telegram, line, repeat_notices_per_day=1)
        async with running(settings, telegram, line, fake_llm) as rig:
            brevity = await rejected(rig, "chat-brevity")
            snappy = await rejected(rig, "snappy-answers", content=SNAPPY, description=SNAPPY_WHEN)
            await synthesize(rig, proposal("short-replies"))
            (first,) = notices_in(rig, ALICE)
            assert f"#{brevity} chat-brevity" in first["text"]
            # Another rejection comes back: its notice waits for tomorrow's room.
            await synthesize(rig, proposal("one-liners", content=SNAPPY, description=SNAPPY_WHEN))
            assert len(notices_in(rig, ALICE)) == len(notices_in(rig, BOB)) == 1
            (waiting,) = await rig.parts.store.unsent_repeat_notices(0.0)
            assert [i.proposal_id for i in waiting.items] == [snappy]
