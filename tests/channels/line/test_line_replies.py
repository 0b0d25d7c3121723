"""LINE answers: reply then push, retry keys, splitting, Markdown, rate limits and the quota."""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Callable

import pytest

from gateway.channels.text import CUT_NOTE, MAX_ANSWER_PARTS
from gateway.config import Settings
from tests.fakes.line_api import USER_ID, text_event, utf16_len
from tests.fakes.openai_server import FakeOpenAI
from tests.line_support import LOADING, PUSH, REPLY, LineRig, line_rig, quick_reply_data


def squeeze(text: str) -> str:
    return re.sub(r"\s+", "", text)


async def test_an_invalid_reply_token_leads_to_exactly_one_push_with_a_retry_key(
    line: LineRig,
) -> None:
    await line.deliver(text_event("hello", reply_token="not-a-token-the-fake-issued"))
    assert [c.status for c in line.fake.calls_to(REPLY)] == [400]
    [push] = line.fake.calls_to(PUSH)
    assert push.status == 200
    assert push.body["to"] == USER_ID
    uuid.UUID(push.headers["X-Line-Retry-Key"])
    assert line.fake.delivered_texts(to=USER_ID) == ["Hello from the fake model."]
    assert len(quick_reply_data(push.body["messages"][-1])) == 2


async def test_a_long_answer_with_emoji_arrives_as_ordered_parts_within_the_limit(
    line: LineRig,
) -> None:
    paragraphs = [f"Part {n}: " + "🙂 word " * 150 for n in range(8)]  # ~6,000 chars, emoji = 2
    answer = "\n\n".join(paragraphs)
    assert len(answer) > 6000 and utf16_len(answer) > 7500
    line.llm.reply(answer)
    await line.deliver(text_event("tell me a lot", reply_token=line.token()))

    [reply] = line.fake.calls_to(REPLY)
    texts = line.fake.delivered_texts()
    assert len(texts) == 2 and [m["text"] for m in reply.body["messages"]] == texts
    assert all(utf16_len(t) <= 5000 for t in texts)
    assert squeeze("".join(texts)) == squeeze(answer)
    assert texts[1].startswith("Part")  # cut between paragraphs, not inside one
    assert [bool(quick_reply_data(m)) for m in reply.body["messages"]] == [False, True]
    assert line.fake.calls_to(PUSH) == []


async def test_an_answer_of_more_than_five_parts_is_cut_with_a_note_and_pushes_nothing(
    line: LineRig,
) -> None:
    answer = "\n\n".join(f"Section {n}. " + "x" * 4980 for n in range(7))
    line.llm.reply(answer)
    await line.deliver(text_event("everything please", reply_token=line.token()))

    [reply] = line.fake.calls_to(REPLY)
    assert line.fake.calls_to(PUSH) == []  # no push quota spent on one long answer
    assert len(reply.body["messages"]) == MAX_ANSWER_PARTS
    texts = line.fake.delivered_texts()
    assert [t.split(".")[0] for t in texts] == [f"Section {n}" for n in range(5)]
    assert texts[-1].endswith(CUT_NOTE) and utf16_len(texts[-1]) <= 5000
    assert quick_reply_data(reply.body["messages"][-1])  # the buttons come with the last part


async def test_a_five_megabyte_answer_is_cut_without_holding_up_the_next_message(
    line: LineRig,
) -> None:
    line.llm.reply("word " * 1_000_000)
    started = time.monotonic()
    await line.deliver(text_event("everything please", reply_token=line.token()))
    assert time.monotonic() - started < 5
    assert len(line.fake.delivered_texts()) == MAX_ANSWER_PARTS
    assert line.fake.delivered_texts()[-1].endswith(CUT_NOTE)


async def test_a_stale_or_redelivered_event_is_answered_by_push(line: LineRig) -> None:
    two_minutes_ago = int((time.time() - 120) * 1000)
    await line.deliver(text_event("old", reply_token=line.token(), timestamp_ms=two_minutes_ago))
    await line.deliver(text_event("again", reply_token=line.token(), redelivery=True))
    assert line.fake.calls_to(REPLY) == []
    assert len(line.fake.calls_to(PUSH)) == 2
    assert line.fake.delivered_texts(to=USER_ID) == ["Hello from the fake model."] * 2


async def test_a_push_whose_response_was_lost_is_retried_with_its_key_and_not_sent_twice(
    line: LineRig,
) -> None:
    # LINE accepts the push but the answer never reaches us (timeout): the retry reuses the
    # stored key, LINE answers 409, and that counts as delivered.
    line.channel.client.timeout = 0.3
    line.fake.set_delay(PUSH, 2.0)
    assert (await line.post(text_event("hello"))).status == 200  # no valid reply token: push
    await line.fake.wait_for(PUSH)
    line.fake.set_delay(PUSH, 0)
    await line.idle()

    calls = line.fake.calls_to(PUSH)
    assert [c.status for c in calls] == [200, 409]
    assert calls[0].headers["X-Line-Retry-Key"] == calls[1].headers["X-Line-Retry-Key"]
    assert line.fake.delivered_texts() == ["Hello from the fake model."]
    assert len(line.llm.requests) == 1


async def test_a_failed_push_of_a_long_answer_is_retried_with_its_key_and_sent_once(
    line: LineRig,
) -> None:
    line.llm.reply("\n\n".join(f"Section {n}. " + "y" * 4980 for n in range(5)))
    line.fake.fail_next(PUSH, 500, "Internal server error")
    await line.deliver(text_event("long"))  # an unknown reply token: the answer goes by push

    assert all(c.status == 400 for c in line.fake.calls_to(REPLY))
    assert [c.status for c in line.fake.calls_to(PUSH)] == [500, 200]
    keys = {c.headers["X-Line-Retry-Key"] for c in line.fake.calls_to(PUSH)}
    assert len(keys) == 1
    assert [t.split(".")[0] for t in line.fake.delivered_texts()] == [
        f"Section {n}" for n in range(5)
    ]


async def test_rate_limits_are_retried_a_bounded_number_of_times(line: LineRig) -> None:
    line.fake.fail_next(REPLY, 429, "Too many requests", times=2)
    await line.deliver(text_event("hello", reply_token=line.token()))
    assert [c.status for c in line.fake.calls_to(REPLY)] == [429, 429, 200]
    assert line.fake.delivered_texts() == ["Hello from the fake model."]

    line.channel.client.rate_limit_retries = 1
    line.fake.fail_next(PUSH, 429, "Too many requests", times=100)
    await line.deliver(text_event("again"))
    # two calls per attempt, five attempts by the inbox worker, then it gives up, and two
    # more for the notice that says so (refused too)
    assert len(line.fake.calls_to(PUSH)) == 12
    assert len(line.fake.delivered_texts()) == 1


async def test_an_exhausted_push_quota_is_logged_shown_in_healthz_and_not_retried(
    line: LineRig, caplog: pytest.LogCaptureFixture
) -> None:
    line.fake.quota_exhausted = True
    with caplog.at_level(logging.ERROR):
        await line.deliver(text_event("hello"))
    assert len(line.fake.calls_to(PUSH)) == 1
    assert any("monthly push quota" in r.getMessage() for r in caplog.records)
    assert await line.inbox_errors() == []
    health = (await (await line.http.get("/healthz")).json())["channels"]["line"]
    assert health["push_quota_exhausted"] is True and health["push_quota_exhausted_since"]

    # A reply token still works while pushes are refused.
    await line.deliver(text_event("by reply", reply_token=line.token()))
    assert line.fake.delivered_texts() == ["Hello from the fake model."]

    line.fake.quota_exhausted = False
    await line.deliver(text_event("later"))
    health = (await (await line.http.get("/healthz")).json())["channels"]["line"]
    assert health["push_quota_exhausted"] is False


async def test_markdown_is_reduced_to_readable_plain_text(line: LineRig) -> None:
    line.llm.reply(
        "## Steps\n\n1. Open **Settings**\n2. Tap `Privacy`\n\n"
        "- see [the guide](https://example.org/guide)\n- ~~old~~ new\n\n```\ncode_here()\n```"
    )
    await line.deliver(text_event("how?", reply_token=line.token()))
    assert line.fake.delivered_texts() == [
        "Steps\n\n1. Open Settings\n2. Tap Privacy\n\n"
        "• see the guide (https://example.org/guide)\n• old new\n\ncode_here()"
    ]


async def test_a_failing_loading_animation_does_not_stop_the_answer(line: LineRig) -> None:
    line.fake.fail_next(LOADING, 500, "Internal server error")
    await line.deliver(text_event("hello", reply_token=line.token()))
    assert [c.status for c in line.fake.calls_to(LOADING)] == [500]
    assert line.fake.delivered_texts() == ["Hello from the fake model."]


async def test_the_exhausted_quota_is_remembered_across_a_restart(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with line_rig(make_settings, fake_llm) as line:
        line.fake.quota_exhausted = True
        await line.deliver(text_event("hello"))
    async with line_rig(make_settings, fake_llm) as line:
        health = (await (await line.http.get("/healthz")).json())["channels"]["line"]
        assert health["push_quota_exhausted"] is True
