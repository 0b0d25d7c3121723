"""👍/👎 in Telegram: presses, the keyboard, the comment after 👎, and the admin listing."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from gateway.config import Settings
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import (
    FakeTelegramAPI,
    make_callback_update,
    make_text_update,
    mention_entity,
)
from tests.telegram_harness import telegram_gateway

GROUP = -1009876543210


def last_message(fake: FakeTelegramAPI, chat_id: int = 1001) -> dict[str, Any]:
    """The newest message the bot sent into a chat, as the fake stores it now."""
    return fake.message(chat_id, max(m for c, m in fake.messages if c == chat_id))


def last_answer(fake: FakeTelegramAPI, chat_id: int = 1001) -> dict[str, Any]:
    """The newest message in a chat that carries the 👍/👎 keyboard."""
    rated = [
        message
        for (chat, _), message in sorted(fake.messages.items())
        if chat == chat_id and "inline_keyboard" in (message.get("reply_markup") or {})
    ]
    return rated[-1]


def press(
    update_id: int, message: dict[str, Any], button: int, *, user_id: int = 1001
) -> dict[str, Any]:
    """A press of button 0 (👍) or 1 (👎) under `message`."""
    markup = message["reply_markup"]
    return make_callback_update(
        update_id,
        markup["inline_keyboard"][0][button]["callback_data"],
        chat_id=message["chat"]["id"],
        user_id=user_id,
        message_id=message["message_id"],
        message_text=message["text"],
        reply_markup=markup,
    )


def labels(message: dict[str, Any]) -> list[str]:
    return [b["text"] for b in message["reply_markup"]["inline_keyboard"][0]]


async def test_thumbs_up_then_down_leaves_one_rating_with_the_comment_from_the_prompt(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm) as gw:
        await gw.deliver(make_text_update(1, "hello"))
        answer = last_answer(gw.fake)
        answer_id = int(
            answer["reply_markup"]["inline_keyboard"][0][0]["callback_data"].split(":")[1]
        )

        await gw.deliver(press(2, answer, 0))
        assert len(gw.fake.calls_of("answerCallbackQuery")) == 1
        assert labels(gw.fake.message(1001, answer["message_id"])) == ["✓ 👍", "👎"]
        assert [(f["rating"], f["comment"]) for f in await gw.feedback()] == [(1, None)]

        await gw.deliver(press(3, answer, 1))
        assert labels(gw.fake.message(1001, answer["message_id"])) == ["👍", "✓ 👎"]
        prompt = last_message(gw.fake)
        assert prompt["text"] == "What went wrong? Reply to this message, or ignore it."
        assert gw.fake.calls_of("sendMessage")[-1].params["reply_markup"]["force_reply"] is True

        await gw.deliver(make_text_update(4, "It was too vague.", reply_to_message=prompt))
        assert last_message(gw.fake)["text"] == "Thanks, I've noted that."

        (row,) = await gw.feedback()
        assert row["rating"] == -1 and row["comment"] == "It was too vague."
        assert (row["channel"], row["chat"], row["user"], row["message_id"]) == (
            "telegram",
            "1001",
            "1001",
            answer_id,
        )
        assert row["created"].endswith("+00:00") and isinstance(row["id"], int)
        assert (await gw.client.get("/admin/api/feedback")).status == 401
    assert len(fake_llm.requests) == 1  # the comment was not answered as a turn


async def test_a_press_during_a_slow_answer_is_acknowledged_promptly(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.reply("A quick answer.")
    fake_llm.stall(1.0)  # the next answer takes a while
    async with telegram_gateway(make_settings, fake_llm) as gw:
        await gw.deliver(make_text_update(1, "quick question"))
        answer = last_answer(gw.fake)
        assert (await gw.post(make_text_update(2, "slow question"))).status == 200
        await fake_llm.wait_for_requests(2)  # the model is now working on the slow one

        started = time.monotonic()
        assert (await gw.post(press(3, answer, 0))).status == 200
        await gw.fake.wait_for("answerCallbackQuery", timeout=0.6)
        assert time.monotonic() - started < 0.6
        assert gw.fake.sent_texts() == ["A quick answer."]  # the slow answer is still coming
        await gw.idle()
        assert gw.fake.sent_texts() == ["A quick answer.", "too late"]
        assert [f["rating"] for f in await gw.feedback()] == [1]


async def test_a_forged_or_stale_press_rates_nothing(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm) as gw:
        await gw.deliver(make_text_update(1, "hello"))
        answer = last_answer(gw.fake)
        data = answer["reply_markup"]["inline_keyboard"][0][1]["callback_data"]
        # Another chat replays this chat's button data on a message of its own.
        await gw.deliver(make_callback_update(2, data, chat_id=2002, user_id=2002, message_id=1))
        # The right chat, but not the message that carries this answer.
        await gw.deliver(make_callback_update(3, data, message_id=answer["message_id"] + 5))
        for n, junk in enumerate(["rate:99999:+1", "rate:1:+5", "nonsense"], start=4):
            await gw.deliver(make_callback_update(n, junk, message_id=answer["message_id"]))
        acks = gw.fake.calls_of("answerCallbackQuery")
        assert len(acks) == 5
        assert all(a.params["text"] == "This button no longer works." for a in acks)
        assert await gw.feedback() == []
        assert gw.fake.calls_of("editMessageReplyMarkup") == []


async def test_a_second_tap_on_the_same_button_changes_nothing_and_fails_nothing(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm) as gw:
        await gw.deliver(make_text_update(1, "hello"))
        answer = last_answer(gw.fake)
        await gw.deliver(press(2, answer, 1))
        await gw.deliver(press(3, last_answer(gw.fake), 1))
        assert [c.status for c in gw.fake.calls_of("editMessageReplyMarkup")] == [200, 400]
        prompts = [t for t in gw.fake.sent_texts() if t.startswith("What went wrong")]
        assert len(prompts) == 1  # asked once, not once per tap
        assert [f["rating"] for f in await gw.feedback()] == [-1]
        errors = await gw.parts.store.run(
            lambda db: [r["last_error"] for r in db.query("select last_error from inbox")]
        )
        assert errors == [None, None, None]


async def test_a_new_message_instead_of_a_comment_is_answered_as_usual(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm) as gw:
        await gw.deliver(make_text_update(1, "hello"))
        await gw.deliver(press(2, last_answer(gw.fake), 1))
        prompt = last_message(gw.fake)
        await gw.deliver(make_text_update(3, "never mind, another question"))
        assert len(fake_llm.requests) == 2
        assert [f["comment"] for f in await gw.feedback()] == [None]
        # The prompt stays open for a while: replying to it later still counts.
        await gw.deliver(make_text_update(4, "it was wrong", reply_to_message=prompt))
        assert [f["comment"] for f in await gw.feedback()] == ["it was wrong"]
    assert len(fake_llm.requests) == 2


async def test_in_a_group_the_prompt_mentions_the_user_who_pressed(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm) as gw:
        text = f"@{gw.fake.bot_username} hello"
        entities = [mention_entity(text, gw.fake.bot_username)]
        update = make_text_update(1, text, chat_id=GROUP, chat_type="supergroup", entities=entities)
        await gw.deliver(update)
        await gw.deliver(press(2, last_answer(gw.fake, GROUP), 1, user_id=555))
        prompt_call = gw.fake.calls_of("sendMessage")[-1]
        assert prompt_call.params["text"].startswith('<a href="tg://user?id=555">Alice</a>, what')
        assert prompt_call.params["reply_markup"]["selective"] is True
        prompt = last_message(gw.fake, GROUP)
        reply = make_text_update(
            3,
            "too long",
            chat_id=GROUP,
            user_id=555,
            chat_type="supergroup",
            reply_to_message=prompt,
        )
        await gw.deliver(reply)
        (row,) = await gw.feedback()
        assert (row["user"], row["chat"], row["comment"]) == ("555", str(GROUP), "too long")


async def test_quick_presses_on_one_answer_count_in_the_order_they_were_made(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm) as gw:
        await gw.deliver(make_text_update(1, "hello"))
        answer = last_answer(gw.fake)
        # Telegram holds up the first press's acknowledgement for a second.
        gw.fake.fail_next(
            "answerCallbackQuery", 429, "Too Many Requests: retry after 1", retry_after=1
        )
        assert (await gw.post(press(2, answer, 0))).status == 200
        await gw.fake.wait_for("answerCallbackQuery")
        assert (await gw.post(press(3, answer, 1))).status == 200
        await gw.idle()
        assert [f["rating"] for f in await gw.feedback()] == [-1]
        assert labels(gw.fake.message(1001, answer["message_id"])) == ["👍", "✓ 👎"]


async def test_a_rating_counts_even_when_its_keyboard_cannot_be_updated(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm) as gw:
        await gw.deliver(make_text_update(1, "hello"))
        answer = last_answer(gw.fake)
        gw.fake.fail_next("editMessageReplyMarkup", 400, "Bad Request: message to edit not found")
        await gw.deliver(press(2, answer, 0))
        assert [f["rating"] for f in await gw.feedback()] == [1]
        assert len(gw.fake.calls_of("answerCallbackQuery")) == 1  # handled once, not retried
