"""Speech-to-text inside the quota and within SKILLGATE_MAX_VOICE_SECONDS (SECURITY.md, S12).

A user over the daily limit still had one-hour voice notes transcribed, at the operator's cost,
before being told about the limit; and no recording was too long.
"""

from __future__ import annotations

from collections.abc import Callable

from gateway.config import Settings
from gateway.conversation import attachments as notices
from gateway.conversation.quota import GATEWAY_LIMIT, USER_LIMIT
from gateway.usage import usage_report, usage_text
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import make_media_update, make_text_update
from tests.media.test_media_telegram import ANSWER, STT, voice
from tests.media_support import ogg_opus, wav
from tests.telegram_harness import ADMIN, telegram_gateway


async def test_a_user_over_the_daily_limit_gets_no_voice_note_transcribed(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm, user_daily_answers=1, **STT) as gw:
        await gw.deliver(make_text_update(1, "hello"))
        for n in (2, 3):
            await gw.deliver(make_media_update(n, voice=voice(gw, f"v{n}", ogg_opus(0.5))))
        assert fake_llm.transcriptions == []
        assert gw.fake.downloads == []
        sent = gw.fake.sent_texts(1001)
        assert sent[0] == ANSWER and len(sent) == 3
        assert all(text.startswith(USER_LIMIT.split("{")[0]) for text in sent[1:])


async def test_a_voice_note_that_gets_a_notice_costs_no_answer_of_the_day(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = {"user_daily_answers": 1, "max_voice_seconds": 1, **STT}
    async with telegram_gateway(make_settings, fake_llm, **settings) as gw:
        await gw.deliver(make_media_update(1, voice=voice(gw, "long", wav(0.2), seconds=5)))
        await gw.deliver(make_text_update(2, "hello"))
        assert gw.fake.sent_texts(1001) == [
            notices.TOO_LONG.format(limit="0:01"),
            ANSWER,
        ]


async def test_a_recording_longer_than_allowed_is_refused_by_what_it_declares_and_by_its_bytes(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = {"max_voice_seconds": 2, **STT}
    async with telegram_gateway(make_settings, fake_llm, **settings) as gw:
        # Declared two hours: refused before any download.
        await gw.deliver(make_media_update(1, voice=voice(gw, "a", wav(0.2), seconds=7200)))
        assert gw.fake.downloads == []
        # Declared one second, but its bytes last three.
        await gw.deliver(make_media_update(2, voice=voice(gw, "b", wav(3.0), seconds=1)))
        assert len(gw.fake.downloads) == 1
        assert fake_llm.transcriptions == []
        assert gw.fake.sent_texts(1001) == [notices.TOO_LONG.format(limit="0:02")] * 2
        # Within the limit: transcribed as before.
        fake_llm.transcripts.append("short and sweet")
        await gw.deliver(make_media_update(3, voice=voice(gw, "c", wav(1.0), seconds=1)))
        assert [t["data"] for t in fake_llm.transcriptions] == [wav(1.0)]


async def test_transcribed_minutes_count_under_the_daily_cost_budget(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = {
        "llm_prices": "*=0/0",  # the model costs nothing: only speech-to-text is paid for
        "stt_price_per_minute": 60.0,
        "daily_cost_budget": 0.5,
        **STT,
    }
    async with telegram_gateway(make_settings, fake_llm, **settings) as gw:
        fake_llm.transcripts.append("what time is it?")
        await gw.deliver(make_media_update(1, voice=voice(gw, "v", ogg_opus(1.0), seconds=1)))
        await gw.deliver(make_text_update(2, "and now?"))
        first, second = gw.fake.sent_texts(1001)
        assert first == ANSWER
        assert second.startswith(GATEWAY_LIMIT.split("{")[0])  # one second cost 1.0


async def test_transcribed_seconds_are_in_the_usage_report(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm, **STT) as gw:
        fake_llm.transcripts.append("what time is it?")
        await gw.deliver(make_media_update(1, voice=voice(gw, "v", ogg_opus(1.0), seconds=90)))
        resp = await gw.client.get("/admin/api/usage", headers=ADMIN)
        assert (await resp.json())["speech_seconds"] == 90
        text = usage_text(await usage_report(gw.parts.store, {}, 1))
        assert "Speech-to-text: 1.5 min transcribed" in text
