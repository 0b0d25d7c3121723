"""Telegram while the model writes: drafts in private chats, per TELEGRAM_STREAMING in groups."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from typing import Any

import pytest

from gateway.config import Settings
from gateway.core.agent import APOLOGY
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import Call, FakeTelegramAPI, make_text_update, mention_entity
from tests.telegram_harness import answer_markup, telegram_gateway

GROUP = -1001234567890
WORDS = " ".join(f"word{i}" for i in range(1, 25))  # 24 chunks
TOO_MANY = "Too Many Requests: retry after 1"
# Drafts every 0.2 s while the fake model writes a word every 0.05 s (about 1.2 s in all).
OPTIONS = {"draft_interval": 0.2, "edit_interval": 0.2}


def answered(fake: FakeTelegramAPI, method: str) -> list[Call]:
    return [c for c in fake.calls_of(method) if c.status == 200]


def group_update(fake: FakeTelegramAPI, update_id: int, thread: int | None = None) -> Any:
    text = f"@{fake.bot_username} tell me"
    return make_text_update(
        update_id,
        text,
        chat_id=GROUP,
        chat_type="supergroup",
        entities=[mention_entity(text, fake.bot_username)],
        message_thread_id=thread,
        is_topic_message=True if thread else None,
    )


async def test_a_private_chat_sees_the_answer_grow_then_one_final_message_with_buttons(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.chunk_interval = 0.05
    fake_llm.reply(f"**Bold** start {WORDS}")
    async with telegram_gateway(make_settings, fake_llm, channel_options=OPTIONS) as gw:
        await gw.deliver(make_text_update(1, "tell me"))
        drafts = answered(gw.fake, "sendMessageDraft")
        [final] = answered(gw.fake, "sendMessage")
    texts = [c.params["text"] for c in drafts]
    assert len(texts) >= 3  # it grew in several steps
    assert all(f"**Bold** start {WORDS}".startswith(t) for t in texts)  # as written so far
    assert len(set(texts)) == len(texts) and texts == sorted(texts, key=len)
    assert all("parse_mode" not in c.params for c in drafts)  # partial text is plain
    assert {c.params["draft_id"] for c in drafts} == {1}  # one draft, animated
    gaps = [b.at - a.at for a, b in itertools.pairwise(drafts)]
    assert min(gaps) >= 0.18  # throttled to the draft interval
    assert final.params["text"].startswith("<b>Bold</b> start word1")  # rendered at the end
    assert final.at > drafts[-1].at
    assert answer_markup(gw.fake) is not None


async def test_a_rate_limited_draft_is_waited_out_and_the_final_message_still_arrives(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.chunk_interval = 0.05
    fake_llm.reply(WORDS)
    async with telegram_gateway(make_settings, fake_llm, channel_options=OPTIONS) as gw:
        gw.fake.fail_next("sendMessageDraft", 429, TOO_MANY, retry_after=1)
        await gw.deliver(make_text_update(1, "tell me"))
        calls = gw.fake.calls_of("sendMessageDraft")
        assert gw.fake.sent_texts() == [WORDS]
        assert answer_markup(gw.fake) is not None
    assert calls[0].status == 429
    assert all(c.at - calls[0].at >= 0.95 for c in calls[1:])  # retry_after honoured
    assert len(gw.fake.calls_of("sendMessage")) == 1


async def test_a_long_answer_grows_within_one_draft_and_arrives_as_its_parts(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.chunk_interval = 0.0005
    answer = "\n\n".join(f"Paragraph {i}: " + "word " * 300 for i in range(6))  # ~9,000 chars
    fake_llm.reply(answer)
    async with telegram_gateway(make_settings, fake_llm, channel_options=OPTIONS) as gw:
        await gw.deliver(make_text_update(1, "tell me everything"))
        drafts = answered(gw.fake, "sendMessageDraft")
        sent = answered(gw.fake, "sendMessage")
    assert drafts and all(len(c.params["text"]) <= 4096 for c in drafts)
    assert len(sent) == 3  # the parts, as without streaming; no half-written message
    assert [c.params.get("reply_markup") is not None for c in sent] == [False, False, True]


async def test_a_tool_round_streams_and_ends_in_one_answer(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.chunk_interval = 0.05
    fake_llm.tool_call("load_skill", name="summarize-text")
    fake_llm.reply(f"Gist: {WORDS}")
    async with telegram_gateway(make_settings, fake_llm, channel_options=OPTIONS) as gw:
        await gw.deliver(make_text_update(1, "Please summarize this text for me"))
        drafts = [c.params["text"] for c in answered(gw.fake, "sendMessageDraft")]
        assert gw.fake.sent_texts() == [f"Gist: {WORDS}"]
    assert len(fake_llm.requests) == 2 and fake_llm.requests[1]["messages"][-1]["role"] == "tool"
    assert drafts and all(f"Gist: {WORDS}".startswith(t) for t in drafts)


async def test_a_model_that_goes_quiet_mid_answer_ends_in_the_apology(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.chunk_interval = 0.05
    fake_llm.go_quiet(WORDS, after=8, seconds=3.0)
    async with telegram_gateway(
        make_settings, fake_llm, channel_options=OPTIONS, llm_idle_timeout_seconds=0.5
    ) as gw:
        await gw.deliver(make_text_update(1, "tell me"))
        assert answered(gw.fake, "sendMessageDraft")  # the start was shown
        assert gw.fake.sent_texts() == [APOLOGY]  # then the placeholder, as without streaming
        assert answer_markup(gw.fake) is None


async def test_a_draft_is_shown_again_while_the_model_is_silent_for_long(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.go_quiet(WORDS, after=3, seconds=1.5)  # thinking, after its first words
    options = OPTIONS | {"draft_keepalive": 0.3}  # 20 s in production: a draft lasts 30 s
    async with telegram_gateway(make_settings, fake_llm, channel_options=options) as gw:
        await gw.deliver(make_text_update(1, "tell me"))
        texts = [c.params["text"] for c in answered(gw.fake, "sendMessageDraft")]
        assert gw.fake.sent_texts() == [WORDS]
    assert texts.count("word1 word2 word3") >= 2  # shown again: kept alive, not lost


async def test_a_bot_api_server_without_drafts_is_not_asked_again(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.chunk_interval = 0.02
    async with telegram_gateway(make_settings, fake_llm, channel_options=OPTIONS) as gw:
        gw.fake.fail_next("sendMessageDraft", 404, "Not Found")  # a server older than 9.3
        fake_llm.reply(WORDS)
        await gw.deliver(make_text_update(1, "tell me"))
        fake_llm.reply(WORDS)
        await gw.deliver(make_text_update(2, "and again"))
        assert [c.status for c in gw.fake.calls_of("sendMessageDraft")] == [404]
        assert gw.fake.sent_texts() == [WORDS, WORDS]


@pytest.mark.parametrize("streaming", ["off", "drafts"])
async def test_a_group_without_edit_streaming_sees_typing_and_then_the_answer(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, streaming: str
) -> None:
    fake_llm.chunk_interval = 0.05
    fake_llm.reply(WORDS)
    async with telegram_gateway(
        make_settings, fake_llm, channel_options=OPTIONS, telegram_streaming=streaming
    ) as gw:
        await gw.deliver(group_update(gw.fake, 1))
        assert gw.fake.calls_of("sendMessageDraft") == []  # Telegram has no drafts in groups
        assert gw.fake.calls_of("editMessageText") == []
        assert gw.fake.sent_texts(GROUP) == [WORDS]
        assert gw.fake.calls_of("sendChatAction")


async def test_a_group_with_edit_streaming_sees_one_message_grow_into_the_answer(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.chunk_interval = 0.05
    fake_llm.reply(f"**Done**: {WORDS}")
    async with telegram_gateway(
        make_settings, fake_llm, channel_options=OPTIONS, telegram_streaming="edit"
    ) as gw:
        await gw.deliver(group_update(gw.fake, 7, thread=42))
        [first] = answered(gw.fake, "sendMessage")
        edits = answered(gw.fake, "editMessageText")
        stored = gw.fake.message(GROUP, 1)
    assert first.params["reply_parameters"]["message_id"] == 7  # replies to the question
    assert first.params["message_thread_id"] == 42  # in its forum topic
    assert len(edits) >= 2 and all(e.params["message_id"] == 1 for e in edits)
    assert all(e.params.get("reply_markup") is None for e in edits[:-1])
    assert edits[-1].params["text"].startswith("<b>Done</b>: word1")
    assert stored["text"] == edits[-1].params["text"] and stored.get("reply_markup")
    gaps = [b.at - a.at for a, b in itertools.pairwise(edits[:-1])]  # the last is the answer
    assert not gaps or min(gaps) >= 0.18


async def test_a_group_answer_that_fails_mid_stream_becomes_the_apology_in_place(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.chunk_interval = 0.05
    fake_llm.go_quiet(WORDS, after=8, seconds=3.0)
    async with telegram_gateway(
        make_settings,
        fake_llm,
        channel_options=OPTIONS,
        telegram_streaming="edit",
        llm_idle_timeout_seconds=0.5,
    ) as gw:
        await gw.deliver(group_update(gw.fake, 1))
        assert len(answered(gw.fake, "sendMessage")) == 1
        assert gw.fake.message(GROUP, 1)["text"] == APOLOGY


async def test_streaming_off_sends_no_drafts_in_a_private_chat(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.chunk_interval = 0.02
    fake_llm.reply(WORDS)
    async with telegram_gateway(
        make_settings, fake_llm, channel_options=OPTIONS, telegram_streaming="off"
    ) as gw:
        await gw.deliver(make_text_update(1, "tell me"))
        assert gw.fake.calls_of("sendMessageDraft") == []
        assert gw.fake.sent_texts() == [WORDS]


async def test_a_group_answer_resumed_after_a_restart_continues_in_its_streamed_message(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.chunk_interval = 0.05
    fake_llm.go_quiet(WORDS, after=6, seconds=2.0)  # the first start never sees it finish
    options: dict[str, Any] = {
        "channel_options": OPTIONS,
        "telegram_streaming": "edit",
        "shutdown_timeout_seconds": 0.1,
    }
    async with FakeTelegramAPI() as fake:
        async with telegram_gateway(make_settings, fake_llm, fake=fake, **options) as gw:
            assert (await gw.post(group_update(fake, 1))).status == 200
            await fake.wait_for("sendMessage")  # the answer started to show, then the stop
        assert fake.message(GROUP, 1).get("reply_markup") is None
        fake_llm.chunk_interval = 0.0
        fake_llm.reply(f"Final: {WORDS}")
        async with telegram_gateway(make_settings, fake_llm, fake=fake, **options) as gw:
            async with asyncio.timeout(10):  # the update resumes at start
                while not fake.message(GROUP, 1).get("reply_markup"):
                    await asyncio.sleep(0.05)
            await gw.idle()
        assert len(answered(fake, "sendMessage")) == 1  # no half-written message left behind
        assert fake.message(GROUP, 1)["text"] == f"Final: {WORDS}"
