"""Telegram: answers spoken back as voice messages (text-to-speech at the fake OpenAI
server's /audio/speech), `/voice` per user, and the bounds on what the speech server sends.

The fake speaks real OGG/Opus and MP3 from libsndfile; the fake Bot API takes the upload as
Telegram does (multipart) and checks it is a voice message's format.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import mutagen
import pytest

from gateway.config import Settings
from gateway.conversation.voice import (
    NOT_SPOKEN,
    SPOKEN_LIMIT,
    VOICE_AUTO,
    VOICE_OFF,
    VOICE_ON,
)
from gateway.i18n import texts_for
from tests.channels.telegram.test_telegram_content import media_update
from tests.channels.telegram.test_telegram_feedback import last_answer, last_message, press
from tests.conversation.test_forget import forget_press
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import make_text_update
from tests.media.test_media_telegram import voice
from tests.media_support import ogg_opus
from tests.telegram_harness import Gateway, telegram_gateway

ANSWER = "Hello from the fake model."
SPEECH = {"stt_model": "whisper-1", "tts_model": "tts-1"}
EN = texts_for("en")


@pytest.fixture
async def gw(make_settings: Callable[..., Settings], fake_llm: FakeOpenAI) -> Any:
    async with telegram_gateway(make_settings, fake_llm, **SPEECH) as gateway:
        yield gateway


def voices_sent(gw: Gateway) -> list[Any]:
    return [c for c in gw.fake.calls_of("sendVoice") if c.status == 200]


async def say_voice_note(gw: Gateway, update_id: int, words: str = "What is Tokyo?") -> None:
    gw.llm.transcripts.append(words)
    audio = ogg_opus(1.0)
    await gw.deliver(media_update(update_id, voice=voice(gw, f"v{update_id}", audio)))


async def test_a_voice_note_is_answered_with_a_voice_message_and_the_text(gw: Gateway) -> None:
    await say_voice_note(gw, 1)
    # The text first, as ever, with the rating buttons, then the same answer spoken.
    assert gw.fake.sent_texts(1001) == [ANSWER]
    [request] = gw.llm.speeches
    assert request == {
        "model": "tts-1",
        "input": ANSWER,
        "voice": "alloy",
        "response_format": "opus",
    }
    [sent] = voices_sent(gw)
    upload = sent.files["voice"]
    assert upload.content[:4] == b"OggS" and b"OpusHead" in upload.content[:128]
    length = mutagen.File(io.BytesIO(upload.content)).info.length
    assert sent.params["duration"] == max(1, round(length))
    assert "reply_markup" not in sent.params  # the buttons are on the text, above it
    text_call = [c for c in gw.fake.calls_of("sendMessage") if c.status == 200][-1]
    buttons = text_call.params["reply_markup"]["inline_keyboard"][0]
    assert [b["text"] for b in buttons] == ["👍", "👎"]
    spoken = last_message(gw.fake)  # the voice comes last, under its text
    assert "voice" in spoken and spoken["voice"]["mime_type"] == "audio/ogg"
    await gw.deliver(press(2, last_answer(gw.fake), 0))
    [rating] = await gw.parts.store.run(lambda db: list(db.query("select rating from feedback")))
    assert rating["rating"] == 1


async def test_a_voice_message_the_user_forbids_leaves_the_text_and_its_buttons(
    gw: Gateway,
) -> None:
    # Telegram Premium users may forbid voice messages: sendVoice is refused, for good.
    gw.fake.fail_next("sendVoice", 400, "Bad Request: VOICE_MESSAGES_FORBIDDEN")
    await say_voice_note(gw, 1)
    assert gw.fake.sent_texts(1001) == [ANSWER] and voices_sent(gw) == []
    await gw.deliver(press(2, last_answer(gw.fake), 1))
    [rating] = await gw.parts.store.run(lambda db: list(db.query("select rating from feedback")))
    assert rating["rating"] == -1
    # Answered once: the update was not retried into a second text.
    assert len(gw.llm.speeches) == 1


async def test_a_typed_message_is_answered_in_text_only_by_default(gw: Gateway) -> None:
    await gw.deliver(make_text_update(1, "hello"))
    assert gw.fake.sent_texts(1001) == [ANSWER]
    assert gw.llm.speeches == [] and voices_sent(gw) == []


async def test_voice_on_off_auto_is_kept_per_user(gw: Gateway) -> None:
    await gw.deliver(make_text_update(1, "/voice on"))
    assert gw.fake.sent_texts(1001)[-1] == EN(VOICE_ON)
    await gw.deliver(make_text_update(2, "hello"))
    assert len(voices_sent(gw)) == 1  # every answer spoken now
    # Another user's choice is their own: still auto.
    await gw.deliver(make_text_update(3, "hi there", chat_id=2002, user_id=2002))
    assert len(voices_sent(gw)) == 1
    await gw.deliver(make_text_update(4, "/voice off"))
    assert gw.fake.sent_texts(1001)[-1] == EN(VOICE_OFF)
    await say_voice_note(gw, 5)
    assert len(voices_sent(gw)) == 1  # off: not even a voice note is spoken
    await gw.deliver(make_text_update(6, "/voice auto"))
    assert gw.fake.sent_texts(1001)[-1] == EN(VOICE_AUTO)
    await say_voice_note(gw, 7)
    assert len(voices_sent(gw)) == 2
    # Without a choice, /voice says the current one and how to change it.
    await gw.deliver(make_text_update(8, "/voice"))
    assert "auto" in gw.fake.sent_texts(1001)[-1]
    [row] = await gw.parts.store.run(
        lambda db: list(db.query("select channel, user_id, mode from user_voices"))
    )
    assert dict(row) == {"channel": "telegram", "user_id": "1001", "mode": "auto"}


async def test_a_long_answer_is_spoken_up_to_the_bound_and_the_rest_stays_text(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    sentence = "This sentence is about thirty-eight chars."
    long_answer = " ".join([sentence] * 10)
    async with telegram_gateway(make_settings, fake_llm, **SPEECH, tts_max_chars=100) as gw:
        gw.llm.reply(long_answer)
        await say_voice_note(gw, 1)
        [request] = gw.llm.speeches
        assert request["input"] == " ".join([sentence] * 2)  # whole sentences within 100
        assert gw.fake.sent_texts(1001) == [long_answer]  # all of it in text


async def test_a_server_that_ignores_the_format_is_converted_to_ogg_opus(gw: Gateway) -> None:
    gw.llm.speech_answer = "wav"
    await say_voice_note(gw, 1)
    [sent] = voices_sent(gw)
    content = sent.files["voice"].content
    assert content[:4] == b"OggS" and b"OpusHead" in content[:128]


@pytest.mark.parametrize("answer", ["empty", "junk", "error"])
async def test_a_failed_speech_leaves_the_text_and_says_so_once(gw: Gateway, answer: str) -> None:
    if answer == "error":
        gw.llm.speech_status = 503
    else:
        gw.llm.speech_answer = answer  # type: ignore[assignment]
    await say_voice_note(gw, 1)
    assert gw.fake.sent_texts(1001) == [ANSWER, EN(NOT_SPOKEN)]
    assert voices_sent(gw) == []
    # The rating buttons stay on the text.
    text_call = next(c for c in gw.fake.calls_of("sendMessage") if c.status == 200)
    assert [b["text"] for b in text_call.params["reply_markup"]["inline_keyboard"][0]] == [
        "👍",
        "👎",
    ]


async def test_a_server_that_sends_too_much_is_cut_off_while_it_reads(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm, **SPEECH, tts_max_mb=0.5) as gw:
        gw.llm.speech_answer = "flood"
        await say_voice_note(gw, 1)
        assert gw.fake.sent_texts(1001) == [ANSWER, EN(NOT_SPOKEN)]
        # The gateway hung up soon after the bound: the flood did not go on.
        assert gw.llm.speech_streamed < 8 * 1024 * 1024


async def test_a_server_that_stalls_is_given_up_on_in_time(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm, **SPEECH, tts_timeout_seconds=0.5) as gw:
        gw.llm.speech_answer = "stall"
        await say_voice_note(gw, 1)
        assert gw.fake.sent_texts(1001) == [ANSWER, EN(NOT_SPOKEN)]


async def test_the_voice_follows_the_chat_language_and_the_override(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(
        make_settings, fake_llm, **SPEECH, tts_voices="ja=jf_alpha,*=af_heart"
    ) as gw:
        await say_voice_note(gw, 1)
        await gw.deliver(make_text_update(2, "/language ja"))
        await say_voice_note(gw, 3)
        assert [s["voice"] for s in gw.llm.speeches] == ["af_heart", "jf_alpha"]


async def test_without_a_speech_model_voice_is_not_offered(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm, stt_model="whisper-1") as gw:
        await say_voice_note(gw, 1)
        assert gw.fake.sent_texts(1001) == [ANSWER] and gw.llm.speeches == []
        await gw.deliver(make_text_update(2, "/voice on"))
        assert "not turned on" in gw.fake.sent_texts(1001)[-1]


async def test_spoken_seconds_a_day_are_bounded_per_user_and_counted(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(
        make_settings,
        fake_llm,
        **SPEECH,
        user_daily_spoken_seconds=1,
        tts_price_per_minute=0.6,
        daily_cost_budget=100.0,
        llm_prices="*=0/0",
    ) as gw:
        await say_voice_note(gw, 1)
        assert len(voices_sent(gw)) == 1  # 1.5 s: the first answer of the day is spoken
        await say_voice_note(gw, 2)
        await say_voice_note(gw, 3)
        assert len(voices_sent(gw)) == 1 and len(gw.llm.speeches) == 1  # not even asked
        # The text goes on; the user is told once that day.
        assert gw.fake.sent_texts(1001) == [ANSWER, ANSWER, EN(SPOKEN_LIMIT), ANSWER]
        rows = await gw.parts.store.run(
            lambda db: list(
                db.query("select spoken_seconds from messages where role = 'assistant'")
            )
        )
        seconds = [r["spoken_seconds"] for r in rows]
        assert seconds[0] is not None and seconds[0] > 1 and seconds[1:] == [None, None]
        # The seconds' price is in the day's cost, under the budget (the model's tokens are free).
        costs = await gw.parts.store.run(
            lambda db: list(db.query("select scope, cost from quota_counts where scope != 'flag'"))
        )
        assert {r["scope"]: r["cost"] for r in costs}["gateway"] == pytest.approx(
            seconds[0] / 60 * 0.6
        )
        # ... and in usage, for the API, the CLI and /usage.
        got = await gw.client.get(
            "/admin/api/usage", headers={"Authorization": "Bearer admin-secret-token"}
        )
        report = await got.json()
        assert report["spoken_seconds"] == round(seconds[0], 1)


async def test_forget_deletes_the_voice_choice_and_the_spoken_seconds(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(
        make_settings, fake_llm, **SPEECH, user_daily_spoken_seconds=1
    ) as gw:
        await gw.deliver(make_text_update(1, "/voice on"))
        await gw.deliver(make_text_update(2, "hello"))
        await gw.deliver(make_text_update(3, "hello again"))  # over: told once today
        assert gw.fake.sent_texts(1001)[-1] == EN(SPOKEN_LIMIT)
        await gw.deliver(make_text_update(4, "/forget"))
        await gw.deliver(forget_press(gw.fake, 5, 1001, 0))

        def left(db: Any) -> list[Any]:
            return [
                *db.query("select * from user_voices"),
                *db.query("select * from quota_counts where subject like '%1001%'"),
                *db.query("select * from messages where spoken_seconds is not null"),
            ]

        assert await gw.parts.store.run(left) == []
        # A new start: the default again (auto), so a typed question is answered in text.
        await gw.deliver(make_text_update(6, "hello"))
        assert len(voices_sent(gw)) == 1
