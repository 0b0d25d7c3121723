"""Every new proposal reaches each Telegram and LINE admin once, as a card with signed buttons."""

from __future__ import annotations

from collections.abc import Callable

from gateway.config import Settings
from tests.cards_support import (
    ALICE,
    BOB,
    LINE_ADMIN,
    LINE_OTHER,
    MALLORY,
    PUSH,
    fakes,
    flex_texts,
    postbacks,
    rig_settings,
    running,
)
from tests.fakes.openai_server import FakeOpenAI

CAROL = 1004


async def test_a_new_proposal_reaches_each_admin_once_as_a_card_with_signed_buttons(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with fakes() as (telegram, line):
        settings = rig_settings(make_settings, fake_llm, telegram, line)
        async with running(settings, telegram, line, fake_llm) as rig:
            pid = await rig.propose(rationale="Two users said the answers were far too long.")

            for admin in (ALICE, BOB):
                (card,) = rig.cards_in(admin)
                text = card["text"]
                assert f"Proposal #{pid}: new skill chat-brevity" in text
                assert "Keep chat answers short" in text  # the description
                assert "Two users said the answers were far too long." in text  # the rationale
                assert "1 session, 1 👎 with a comment" in text  # the evidence
                assert "“far too long for a chat”" in text  # the feedback behind it
                assert "+Answer in at most three short sentences." in text  # the diff
                rows = card["reply_markup"]["inline_keyboard"]
                buttons = {b["text"]: b["callback_data"] for row in rows for b in row}
                assert list(buttons) == ["✅ Approve", "❌ Reject", "🔍 Full diff"]
                assert all(len(data.encode()) <= 64 for data in buttons.values())
                assert buttons["✅ Approve"].startswith(f"pa:{pid}:")
            assert rig.cards_in(MALLORY) == []
            assert telegram.sent_texts(MALLORY) == []

            (flex,) = rig.line_cards(LINE_ADMIN)
            actions = postbacks(flex)
            assert list(actions) == ["Approve", "Reject", "Full diff"]
            assert all(len(data) <= 300 for data in actions.values())
            assert actions["Reject"].startswith(f"pr:{pid}:")
            assert (
                actions["Approve"]
                != rig.cards_in(ALICE)[0]["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
            )  # each channel signs with its own key
            shown = flex_texts(flex)
            assert "1 session, 1 👎 with a comment" in shown and "Keep chat answers short" in shown
            assert len(flex["altText"]) <= 400
            assert line.delivered_messages(LINE_OTHER) == []

            copies = await rig.parts.store.card_copies(pid)
            assert sorted((c.channel, c.chat_id) for c in copies) == [
                ("line", LINE_ADMIN),
                ("telegram", str(ALICE)),
                ("telegram", str(BOB)),
            ]
            assert all(c.platform_message_id and c.delivered_at for c in copies)


async def test_a_restart_sends_no_card_twice_and_reaches_an_admin_added_meanwhile(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with fakes() as (telegram, line):
        settings = rig_settings(make_settings, fake_llm, telegram, line)
        async with running(settings, telegram, line, fake_llm) as rig:
            await rig.propose()
        sent, pushed = len(telegram.calls_of("sendMessage")), len(line.calls_to(PUSH))
        assert (sent, pushed) == (2, 1)

        async with running(settings, telegram, line, fake_llm):
            pass
        assert len(telegram.calls_of("sendMessage")) == sent
        assert len(line.calls_to(PUSH)) == pushed

        more = settings.model_copy(update={"telegram_admin_ids": [ALICE, BOB, CAROL]})
        async with running(more, telegram, line, fake_llm) as rig:
            assert len(rig.cards_in(CAROL)) == 1
            assert len(rig.cards_in(ALICE)) == len(rig.cards_in(BOB)) == 1
        assert len(line.calls_to(PUSH)) == pushed


async def test_a_card_that_failed_to_send_goes_out_once_with_the_same_line_retry_key(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with fakes() as (telegram, line):
        settings = rig_settings(make_settings, fake_llm, telegram, line)
        async with running(settings, telegram, line, fake_llm) as rig:
            telegram.fail_next("sendMessage", 400, "Bad Request: chat not found")
            line.fail_next(PUSH, 500, "Internal error")
            pid = await rig.propose()
            assert len(rig.cards_in(ALICE)) == 0 and len(rig.cards_in(BOB)) == 1
            assert rig.line_cards() == []

            cards = rig.parts.admins.cards
            assert cards is not None
            cards.submit(cards.sync)  # a claim younger than `retake_after` is left alone
            await rig.idle()
            assert len(rig.cards_in(ALICE)) == 0

            cards.retake_after = 0  # as if the periodic sync came by later
            cards.submit(cards.sync)
            await rig.idle()
            assert [len(rig.cards_in(a)) for a in (ALICE, BOB)] == [1, 1]
            assert len(rig.line_cards()) == 1
            keys = {c.headers["X-Line-Retry-Key"] for c in line.calls_to(PUSH)}
            assert len(line.calls_to(PUSH)) == 2 and len(keys) == 1
            assert len(await rig.parts.store.card_copies(pid)) == 3
