"""Telegram: what real updates get, through the webhook against the fake Bot API.

The fixtures are written after the shapes Telegram and its client libraries show: the Bot
API guide's examples without `is_bot`, dates in milliseconds, polls from before Bot API
10.0, captions, albums, venues, stickers, edits, presses whose data no one can use.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import pytest

from gateway.channels.telegram.dialect import TEXT_ONLY
from gateway.config import Settings
from gateway.conversation.attachments import NO_STT
from tests.channels.telegram.test_telegram_feedback import last_answer, last_message, press
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import (
    make_callback_update,
    make_media_update,
    make_text_update,
    mention_entity,
)
from tests.telegram_harness import Gateway, telegram_gateway

GROUP = -1002233445566
BOT = {"id": 123456, "is_bot": True, "first_name": "Test Bot", "username": "skillgate_test_bot"}
PHOTO = [{"file_id": "AgAD1", "file_unique_id": "AQAD1", "width": 90, "height": 67}]
VIDEO = {"file_id": "BAAD", "file_unique_id": "AgAE", "width": 1, "height": 1, "duration": 3}


def media_update(update_id: int, chat_type: str = "private", **fields: Any) -> dict[str, Any]:
    """A message with no text, from user 1001, carrying `fields` (photo, caption, venue...)."""
    chat_id = GROUP if chat_type != "private" else 1001
    return make_media_update(update_id, chat_id=chat_id, chat_type=chat_type, **fields)


def prompts(gw: Gateway) -> list[str]:
    return [str(r["messages"][-1]["content"]) for r in gw.llm.requests]


async def unreadable_count(gw: Gateway) -> float:
    text = await (await gw.client.get("/metrics")).text()
    for line in text.splitlines():
        if line.startswith('skillgate_updates_unreadable_total{channel="telegram"}'):
            return float(line.split()[-1])
    return 0.0


@pytest.fixture
async def gw(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> Any:  # an async generator of Gateway
    async with telegram_gateway(make_settings, fake_llm) as gateway:
        yield gateway


async def test_updates_the_sdk_refuses_are_still_answered(gw: Gateway) -> None:
    # The Bot API guide's own example: no `is_bot`, no chat type.
    guide = make_text_update(1, "hello from the guide")
    del guide["message"]["from"]["is_bot"]
    del guide["message"]["chat"]["type"]
    # A date in milliseconds, as one library's fixtures have it.
    millis = make_text_update(2, "a late date")
    millis["message"]["date"] = int(time.time() * 1000)
    # A reply to a poll from before Bot API 10.0 (no `members_only`).
    poll = {
        "message_id": 7,
        "date": int(time.time()),
        "chat": {"id": 1001, "type": "private"},
        "from": BOT,
        "poll": {
            "id": "5",
            "question": "Tea?",
            "options": [{"text": "yes", "voter_count": 0}],
            "total_voter_count": 0,
            "is_closed": False,
            "is_anonymous": True,
            "type": "regular",
            "allows_multiple_answers": False,
        },
    }
    reply = make_text_update(3, "why this poll?", reply_to_message=poll)
    # A 1:1 message without `from`: the chat is the user.
    no_from = make_text_update(4, "who am I?")
    del no_from["message"]["from"]
    for update in (guide, millis, reply, no_from):
        await gw.deliver(update)
    assert prompts(gw) == ["hello from the guide", "a late date", "why this poll?", "who am I?"]
    assert gw.fake.sent_texts(1001) == ["Hello from the fake model."] * 4
    assert await unreadable_count(gw) == 0


async def test_an_unreadable_update_is_counted_and_logged_by_id_without_its_text(
    gw: Gateway, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    broken = {"update_id": 77, "message": {"message_id": "x", "text": "secret words"}}
    await gw.deliver(broken)
    await gw.deliver({"update_id": 78, "message": "unknown_format"})
    assert await unreadable_count(gw) == 2
    warned = [r.getMessage() for r in caplog.records if "unreadable" in r.getMessage()]
    assert len(warned) == 2 and "77" in warned[0] and "78" in warned[1]
    assert "secret words" not in caplog.text
    # Updates the gateway does not handle are no loss, and not counted.
    await gw.deliver({"update_id": 79, "inline_query": {"id": "1", "from": {"id": 5}}})
    assert await unreadable_count(gw) == 2
    assert gw.fake.sent_texts() == []


async def test_a_press_is_answered_even_when_nothing_in_it_can_be_used(gw: Gateway) -> None:
    garbage = make_callback_update(1, "\x00not-ours")
    no_data = make_callback_update(2, "")
    del no_data["callback_query"]["data"]  # a game button: game_short_name only
    no_data["callback_query"]["game_short_name"] = "tetris"
    unreadable = make_callback_update(3, "rate:1:+1")
    del unreadable["callback_query"]["from"]  # not even who pressed
    for update in (garbage, no_data, unreadable):
        await gw.deliver(update)
    answered = [c.params["callback_query_id"] for c in gw.fake.calls_of("answerCallbackQuery")]
    assert answered == [u["callback_query"]["id"] for u in (garbage, no_data, unreadable)]
    assert await unreadable_count(gw) == 1


async def test_a_caption_is_read_as_the_message(gw: Gateway) -> None:
    gif = {"file_id": "CgAD", "file_unique_id": "AgAD", "width": 1, "height": 1, "duration": 1}
    await gw.deliver(media_update(1, animation=gif, caption="Why is this funny?"))
    await gw.deliver(media_update(2, video=VIDEO, caption="Where was this filmed?"))
    assert prompts(gw) == ["Why is this funny?", "Where was this filmed?"]


async def test_media_without_words_gets_one_notice_per_album(gw: Gateway) -> None:
    await gw.deliver(media_update(1, video_note={**VIDEO, "length": 240}, caption=None))
    for update_id in (2, 3, 4):
        await gw.deliver(media_update(update_id, video=VIDEO, media_group_id="13573"))
    await gw.deliver(media_update(5, video=VIDEO, media_group_id="24680"))
    # A video note is speech, and no speech-to-text is set up here: it says so.
    assert gw.fake.sent_texts(1001) == [NO_STT, TEXT_ONLY, TEXT_ONLY]
    assert gw.llm.requests == []


async def test_places_and_stickers_are_passed_on_as_text(gw: Gateway) -> None:
    location = {"latitude": 35.681236, "longitude": 139.767125}
    venue = {"location": location, "title": "Tokyo Station", "address": "1 Marunouchi"}
    await gw.deliver(media_update(1, location=location, venue=venue))
    await gw.deliver(media_update(2, location=location))
    sticker = {
        "file_id": "CAAC",
        "file_unique_id": "AgAD",
        "type": "regular",
        "width": 512,
        "height": 512,
        "is_animated": True,
        "is_video": False,
        "emoji": "😂",
    }
    await gw.deliver(media_update(3, sticker=sticker))
    assert prompts(gw) == [
        "[Shared a place: Tokyo Station, 1 Marunouchi]",
        "[Shared a place: 35.68124, 139.76712]",
        "[Sent a sticker: 😂]",
    ]


async def test_in_a_group_media_is_answered_only_when_addressed(gw: Gateway) -> None:
    caption = "@skillgate_test_bot what is in this video?"
    entity = mention_entity(caption, "skillgate_test_bot")
    await gw.deliver(
        media_update(1, "supergroup", video=VIDEO, caption=caption, caption_entities=[entity])
    )
    assert prompts(gw) == ["what is in this video?"]
    answer = last_message(gw.fake, GROUP)
    # A video replying to the bot, without words: a notice, as a reply to it.
    await gw.deliver(media_update(2, "supergroup", video=VIDEO, reply_to_message=answer))
    assert gw.fake.sent_texts(GROUP)[-1] == TEXT_ONLY
    assert gw.fake.calls_of("sendMessage")[-1].params["reply_parameters"]["message_id"] == 2
    # Media for the others in the group: silence, captioned or not.
    await gw.deliver(media_update(3, "supergroup", photo=PHOTO))
    await gw.deliver(media_update(4, "supergroup", video=VIDEO, caption="look at this"))
    assert len(gw.fake.sent_texts(GROUP)) == 2
    assert len(gw.llm.requests) == 1


async def test_an_edited_message_is_not_answered_again(gw: Gateway) -> None:
    await gw.deliver(make_text_update(1, "what is tea?"))
    edit = make_text_update(2, "what is green tea?", message_id=1)
    edit["edited_message"] = edit.pop("message")
    edit["edited_message"]["edit_date"] = int(time.time())
    await gw.deliver(edit)
    assert prompts(gw) == ["what is tea?"]
    assert gw.fake.sent_texts(1001) == ["Hello from the fake model."]


async def test_a_second_thumbs_down_after_a_comment_does_not_ask_again(gw: Gateway) -> None:
    await gw.deliver(make_text_update(1, "hello"))
    answer = last_answer(gw.fake)
    await gw.deliver(press(2, answer, 1))
    prompt = last_message(gw.fake)
    await gw.deliver(make_text_update(3, "Too vague.", reply_to_message=prompt))
    await gw.deliver(press(4, answer, 0))
    await gw.deliver(press(5, answer, 1))
    asked = [t for t in gw.fake.sent_texts(1001) if t.startswith("What went wrong?")]
    assert len(asked) == 1
    assert [(f["rating"], f["comment"]) for f in await gw.feedback()] == [(-1, "Too vague.")]


async def test_in_a_group_only_the_user_asked_answers_with_a_reply_to_the_prompt(
    gw: Gateway,
) -> None:
    text = "@skillgate_test_bot hello"
    await gw.deliver(
        make_text_update(
            1,
            text,
            chat_id=GROUP,
            chat_type="supergroup",
            entities=[mention_entity(text, "skillgate_test_bot")],
        )
    )
    answer = last_answer(gw.fake, GROUP)
    await gw.deliver(press(2, answer, 1))
    prompt = last_message(gw.fake, GROUP)
    # Someone else replying to the prompt is a normal message to the bot, not the comment.
    other = make_text_update(
        3, "not my rating", chat_id=GROUP, chat_type="supergroup", user_id=1002
    )
    other["message"]["reply_to_message"] = prompt
    await gw.deliver(other)
    # The user asked, talking to the group: not the comment, and no thanks in the group.
    await gw.deliver(make_text_update(4, "anyway", chat_id=GROUP, chat_type="supergroup"))
    assert [(f["rating"], f["comment"]) for f in await gw.feedback()] == [(-1, None)]
    assert "Thanks, I've noted that." not in gw.fake.sent_texts(GROUP)
    mine = make_text_update(5, "Too vague.", chat_id=GROUP, chat_type="supergroup")
    mine["message"]["reply_to_message"] = prompt
    await gw.deliver(mine)
    assert [(f["rating"], f["comment"]) for f in await gw.feedback()] == [(-1, "Too vague.")]
    assert gw.fake.sent_texts(GROUP)[-1] == "Thanks, I've noted that."


async def test_polling_takes_updates_the_sdk_refuses_without_stalling(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm, telegram_polling=True) as gw:
        refused = make_text_update(1, "no is_bot here")
        del refused["message"]["from"]["is_bot"]
        gw.fake.push_update(refused)
        gw.fake.push_update(make_text_update(2, "and then this"))
        await gw.fake.wait_for("sendMessage", 2)
        await gw.idle()
        assert prompts(gw) == ["no is_bot here", "and then this"]
