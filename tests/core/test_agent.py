"""The agent against a loopback OpenAI-compatible server through the real `openai` client."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from gateway.config import Settings
from gateway.core.agent import APOLOGY, NOT_CONFIGURED
from gateway.core.models import ChatRef, IncomingMessage
from gateway.runtime.assembly import Parts, close_parts, open_parts
from tests.fakes.openai_server import FakeOpenAI

CHAT = ChatRef(channel="console", chat_id="c1", user_id="u1")


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def parts(settings: Settings, clock: Clock) -> AsyncIterator[Parts]:
    parts = await open_parts(settings, clock=clock)
    yield parts
    await close_parts(parts)


def say(text: str) -> IncomingMessage:
    return IncomingMessage(chat=CHAT, text=text)


async def test_plain_answer_is_stored_with_its_trace_and_rating_buttons(
    parts: Parts, fake_llm: FakeOpenAI
) -> None:
    fake_llm.reply("Paris is the capital of France.")
    reply = await parts.agent.respond(say("What is the capital of France?"))
    assert reply.text == "Paris is the capital of France."
    assert reply.kind == "normal"
    assert [b.label for b in reply.buttons] == ["👍", "👎"]
    assert reply.message_id is not None
    trace = await parts.store.get_trace(reply.message_id)
    assert trace is not None and trace.completed and trace.error is None
    assert trace.model == "fake-model" and trace.prompt_tokens > 0
    sent = fake_llm.requests[0]
    assert sent["model"] == "fake-model"
    assert sent["messages"][-1] == {"role": "user", "content": "What is the capital of France?"}


async def test_load_skill_tool_call_feeds_the_body_and_is_traced(
    parts: Parts, fake_llm: FakeOpenAI
) -> None:
    fake_llm.tool_call("load_skill", name="summarize-text")
    fake_llm.reply("Gist: ...")
    reply = await parts.agent.respond(say("Please summarize this text for me"))
    assert reply.text == "Gist: ..."
    first, second = fake_llm.requests
    assert "summarize-text" in first["messages"][0]["content"]
    assert first["tools"][0]["function"]["name"] == "load_skill"
    tool_result = second["messages"][-1]
    assert tool_result["role"] == "tool"
    assert "one-sentence gist" in tool_result["content"]
    trace = await parts.store.get_trace(reply.message_id or 0)
    assert trace is not None
    assert trace.skills_loaded == ["summarize-text"]
    assert "summarize-text" in trace.skills_offered
    assert trace.tools_used == ["load_skill"]


async def test_loading_an_unknown_or_traversing_skill_returns_an_error_to_the_model(
    parts: Parts, fake_llm: FakeOpenAI
) -> None:
    fake_llm.tool_call("load_skill", name="../../etc/passwd")
    fake_llm.reply("I could not load it.")
    reply = await parts.agent.respond(say("summarize"))
    assert fake_llm.requests[1]["messages"][-1]["content"].startswith("error: no enabled skill")
    trace = await parts.store.get_trace(reply.message_id or 0)
    assert trace is not None and trace.skills_loaded == []


async def test_a_500_then_success_is_retried_transparently(
    parts: Parts, fake_llm: FakeOpenAI
) -> None:
    fake_llm.error(500)
    fake_llm.reply("Recovered.")
    reply = await parts.agent.respond(say("hello"))
    assert reply.text == "Recovered." and reply.kind == "normal"
    assert len(fake_llm.requests) == 2


async def test_a_timeout_gives_a_flagged_placeholder_without_buttons(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = make_settings(
        llm_base_url=fake_llm.base_url,
        llm_model="fake-model",
        llm_timeout_seconds=0.3,
        llm_max_retries=1,
    )
    parts = await open_parts(settings)
    try:
        fake_llm.stall(1.5, times=2)
        reply = await parts.agent.respond(say("hello"))
    finally:
        await close_parts(parts)
    assert reply.text == APOLOGY
    assert reply.kind == "error"
    assert reply.buttons == []
    # Not re-run from scratch while the user waits: one try, then the placeholder.
    assert len(fake_llm.requests) == 1


async def test_placeholders_are_never_sent_back_to_the_model(
    parts: Parts, fake_llm: FakeOpenAI
) -> None:
    fake_llm.error(400)  # not retried: a placeholder at once
    failed = await parts.agent.respond(say("first question"))
    assert failed.kind == "error"
    fake_llm.reply("Second answer.")
    await parts.agent.respond(say("second question"))
    history = fake_llm.requests[-1]["messages"][1:]
    assert [m["content"] for m in history] == ["first question", "second question"]
    assert all(APOLOGY not in str(m["content"]) for m in fake_llm.requests[-1]["messages"])


async def test_no_model_configured_answers_with_a_placeholder(
    make_settings: Callable[..., Settings],
) -> None:
    parts = await open_parts(make_settings())
    try:
        reply = await parts.agent.respond(say("hello"))
    finally:
        await close_parts(parts)
    assert reply.text == NOT_CONFIGURED and reply.kind == "error"


async def test_an_idle_session_is_finished_and_a_new_one_starts(
    parts: Parts, fake_llm: FakeOpenAI, settings: Settings, clock: Clock
) -> None:
    await parts.agent.respond(say("one"))
    clock.now += settings.session_idle_minutes * 60 - 1
    await parts.agent.respond(say("two"))
    assert [m["content"] for m in fake_llm.requests[-1]["messages"][1:]] == [
        "one",
        "Hello from the fake model.",
        "two",
    ]
    first = await parts.store.get_session(1)
    assert first is not None and first.finished_at is None

    clock.now += settings.session_idle_minutes * 60 + 1
    await parts.agent.respond(say("three"))
    assert [m["content"] for m in fake_llm.requests[-1]["messages"][1:]] == ["three"]
    first = await parts.store.get_session(1)
    assert first is not None and first.finish_reason == "idle" and first.finished_at == clock.now


async def test_history_is_bounded_by_its_token_budget(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = make_settings(
        llm_base_url=fake_llm.base_url, llm_model="fake-model", history_tokens=200
    )
    parts = await open_parts(settings)
    try:
        for i in range(30):
            await parts.agent.respond(say(f"message {i} " + "word " * 20))
    finally:
        await close_parts(parts)
    last = fake_llm.requests[-1]["messages"]
    history_chars = sum(len(m["content"]) for m in last[1:])
    assert history_chars <= 200 * 4
    assert last[-1]["content"].startswith("message 29 ")
    assert last[1]["role"] == "user"
