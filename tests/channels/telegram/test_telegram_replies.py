"""Telegram out: 429s, long answers in parts, the plain-text fallback, typing, failures."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable

from gateway.channels.text import CUT_NOTE, MAX_ANSWER_PARTS
from gateway.config import Settings
from gateway.core.agent import APOLOGY
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import html_to_plain, make_text_update
from tests.telegram_harness import answer_markup, telegram_gateway

TOO_MANY = "Too Many Requests: retry after 1"


def long_answer() -> str:
    """About 11,000 characters: paragraphs, a long code block, emoji (two UTF-16 units each)."""
    paragraphs = [f"Paragraph {i}: " + "word " * 150 + "😀" for i in range(8)]
    code = "```python\n" + "\n".join(f"print({i})  # {'x' * 40}" for i in range(80)) + "\n```"
    return "\n\n".join([*paragraphs[:4], code, *paragraphs[4:]])


async def test_a_rate_limited_part_waits_and_is_delivered_exactly_once(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm) as gw:
        gw.fake.fail_next("sendMessage", 429, TOO_MANY, retry_after=1)
        await gw.deliver(make_text_update(1, "hello"))
        attempts = gw.fake.calls_of("sendMessage")
        assert [c.status for c in attempts] == [429, 200]
        assert attempts[1].at - attempts[0].at >= 0.95  # retry_after was honoured
        assert gw.fake.sent_texts() == ["Hello from the fake model."]
        assert answer_markup(gw.fake) is not None


async def test_a_long_answer_arrives_as_ordered_parts_within_the_limit(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    text = long_answer()
    fake_llm.reply(text)
    async with telegram_gateway(make_settings, fake_llm) as gw:
        await gw.deliver(make_text_update(1, "tell me a lot"))
        calls = [c for c in gw.fake.calls_of("sendMessage") if c.status == 200]
        assert len(calls) >= 3
        visible = [html_to_plain(c.params["text"]) for c in calls]
        assert all(len(v.encode("utf-16-le")) // 2 <= 4096 for v in visible)
        # In order, nothing lost: every paragraph and code line shows up once, in sequence.
        joined = "\n".join(visible)
        marks = [f"Paragraph {i}:" for i in range(4)] + [f"print({i})" for i in range(80)]
        marks += [f"Paragraph {i}:" for i in range(4, 8)]
        positions = [joined.find(m) for m in marks]
        assert -1 not in positions and positions == sorted(positions)
        # The code block was cut into parts that each open and close their own <pre>.
        code_parts = [c.params["text"] for c in calls if "print(" in c.params["text"]]
        assert len(code_parts) >= 2
        assert all(p.count("<pre>") == p.count("</pre>") == 1 for p in code_parts)
        # Only the last part carries the buttons.
        assert [c.params.get("reply_markup") is not None for c in calls] == [False] * (
            len(calls) - 1
        ) + [True]


async def test_parts_already_sent_are_not_sent_again_when_delivery_is_retried(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.reply(long_answer())
    options = {"max_retries": 0}  # the first 429 fails the attempt; the inbox retries it
    async with telegram_gateway(make_settings, fake_llm, channel_options=options) as gw:
        gw.fake.fail_next("sendMessage", 429, TOO_MANY, retry_after=1, after=1)
        await gw.deliver(make_text_update(1, "tell me a lot"))
        statuses = [c.status for c in gw.fake.calls_of("sendMessage")]
        assert statuses.count(429) == 1
        texts = gw.fake.sent_texts()
        assert len(texts) == len(set(texts)) >= 3  # every part exactly once
        assert html_to_plain(texts[0]).startswith("Paragraph 0:")
    assert len(fake_llm.requests) == 1  # the stored answer was reused, not asked again


async def test_a_part_telegram_cannot_parse_is_resent_as_plain_text(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.reply("Use **bold** for <emphasis> & more.")
    async with telegram_gateway(make_settings, fake_llm) as gw:
        gw.fake.fail_next(
            "sendMessage", 400, "Bad Request: can't parse entities: Unsupported start tag"
        )
        await gw.deliver(make_text_update(1, "format something"))
        first, second = gw.fake.calls_of("sendMessage")
        assert first.params["parse_mode"] == "HTML"
        assert first.params["text"] == "Use <b>bold</b> for &lt;emphasis&gt; &amp; more."
        assert "parse_mode" not in second.params
        assert second.params["text"] == "Use **bold** for <emphasis> & more."
        assert second.status == 200 and second.params["reply_markup"] is not None


async def test_typing_is_shown_and_renewed_while_the_model_works(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.stall(0.5)
    options = {"typing_interval": 0.1}
    async with telegram_gateway(make_settings, fake_llm, channel_options=options) as gw:
        await gw.deliver(make_text_update(1, "think hard"))
        typing = gw.fake.calls_of("sendChatAction")
        assert len(typing) >= 3
        assert {c.params["action"] for c in typing} == {"typing"}
        (answer,) = gw.fake.calls_of("sendMessage")
        assert all(c.at < answer.at for c in typing)  # it stops once the answer is sent


async def test_a_quick_answer_is_sent_without_a_typing_indicator(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    options = {"typing_delay": 10.0}
    async with telegram_gateway(make_settings, fake_llm, channel_options=options) as gw:
        await gw.deliver(make_text_update(1, "quick one"))
        assert len(gw.fake.calls_of("sendMessage")) == 1
        assert gw.fake.calls_of("sendChatAction") == []


async def test_a_model_failure_reaches_the_user_as_an_apology_without_buttons(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.error(500, times=3)  # more than the client's retries
    async with telegram_gateway(make_settings, fake_llm) as gw:
        await gw.deliver(make_text_update(1, "hello"))
        assert [html_to_plain(t) for t in gw.fake.sent_texts()] == [APOLOGY]
        assert answer_markup(gw.fake) is None


async def test_private_chats_are_paced_between_parts(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.reply("\n\n".join(["a" * 3000, "b" * 3000, "c" * 3000]))
    options = {"private_interval": 0.3}
    async with telegram_gateway(make_settings, fake_llm, channel_options=options) as gw:
        started = time.monotonic()
        await gw.deliver(make_text_update(1, "three parts please"))
        sends = gw.fake.calls_of("sendMessage")
        assert len(sends) == 3
        gaps = [b.at - a.at for a, b in itertools.pairwise(sends)]
        assert all(gap >= 0.25 for gap in gaps), gaps
        assert time.monotonic() - started < 5


async def test_answers_across_chats_keep_to_the_configured_messages_per_second(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm, telegram_max_messages_per_second=4) as gw:
        for chat in range(1, 7):
            resp = await gw.post(make_text_update(chat, "hi", chat_id=chat, user_id=chat))
            assert resp.status == 200
        await gw.idle()
        sends = sorted(c.at for c in gw.fake.calls_of("sendMessage"))
        assert len(sends) == 6
        # Four go at once, then one every quarter second.
        assert sends[-1] - sends[0] >= 0.4, sends


async def test_a_five_megabyte_answer_is_cut_to_a_few_parts_with_a_note(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.reply("A sentence that goes on. " * 200_000)
    async with telegram_gateway(make_settings, fake_llm) as gw:
        started = time.monotonic()
        await gw.deliver(make_text_update(1, "tell me everything"))
        assert time.monotonic() - started < 10
        sent = gw.fake.sent_texts()
        assert len(sent) == MAX_ANSWER_PARTS
        assert html_to_plain(sent[-1]).endswith(CUT_NOTE)
        assert answer_markup(gw.fake) is not None  # rating buttons still on the last part
