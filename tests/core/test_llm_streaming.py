"""The model call streams: partial text, tool-call deltas, usage, and the two timeouts."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from gateway.core.llm import OpenAIChat
from gateway.core.stream import PartialText
from gateway.errors import ModelError, ModelUnavailable
from tests.fakes.openai_server import FakeOpenAI

HI = [{"role": "user", "content": "hi"}]
TOOLS = [{"type": "function", "function": {"name": "load_skill", "parameters": {}}}]


@pytest.fixture
async def model(fake_llm: FakeOpenAI) -> AsyncIterator[OpenAIChat]:
    llm = OpenAIChat(fake_llm.base_url, "fake-model", timeout=2.0, idle_timeout=1.0, backoff=0)
    yield llm
    await llm.close()


async def watch(partial: PartialText) -> list[str]:
    """Every visible text the partial answer showed, in order, until it is closed."""
    seen: list[str] = []
    while not partial.closed:
        await partial.changed()
        text = partial.visible()
        if text and (not seen or seen[-1] != text):
            seen.append(text)
    return seen


async def test_an_answer_streams_with_usage_and_never_shows_its_thinking(
    model: OpenAIChat, fake_llm: FakeOpenAI
) -> None:
    fake_llm.chunk_interval = 0.01
    fake_llm.reply("<think>The user greets me.</think>Hello there, nice to meet you today.")
    partial = PartialText()
    watcher = asyncio.create_task(watch(partial))
    completion = await model.complete(HI, partial=partial)
    partial.close()
    seen = await watcher
    assert completion.text == "Hello there, nice to meet you today."
    assert completion.reasoning == "The user greets me."
    assert completion.completion_tokens > 0  # from the usage chunk at the end
    assert fake_llm.requests[0]["stream"] is True
    assert fake_llm.requests[0]["stream_options"] == {"include_usage": True}
    assert len(seen) > 1 and seen[-1] == completion.text
    assert all("think" not in text and "<" not in text for text in seen)
    assert all(completion.text.startswith(text) for text in seen)


async def test_a_streamed_tool_call_is_put_together_from_its_deltas(
    model: OpenAIChat, fake_llm: FakeOpenAI
) -> None:
    fake_llm.tool_call("load_skill", name="summarize-text", detail={"level": 2})
    completion = await model.complete(HI, tools=TOOLS)
    [call] = completion.tool_calls
    assert call.name == "load_skill" and call.id
    assert call.args() == {"name": "summarize-text", "detail": {"level": 2}}
    assert completion.finish_reason == "tool_calls"


async def test_a_server_that_refuses_stream_options_is_asked_without_them_from_then_on(
    model: OpenAIChat, fake_llm: FakeOpenAI
) -> None:
    fake_llm.refuse_stream_options = True
    assert (await model.complete(HI)).text == "Hello from the fake model."
    assert (await model.complete(HI)).text == "Hello from the fake model."
    sent = [("stream_options" in body, body["stream"]) for body in fake_llm.requests]
    assert sent == [(True, True), (False, True), (False, True)]


async def test_a_server_that_answers_whole_despite_stream_is_read_all_the_same(
    model: OpenAIChat, fake_llm: FakeOpenAI
) -> None:
    fake_llm.raw({"choices": [{"message": {"role": "assistant", "content": "Whole."}}]})
    assert (await model.complete(HI)).text == "Whole."


async def test_no_first_chunk_within_the_first_token_timeout_is_a_timeout(
    fake_llm: FakeOpenAI,
) -> None:
    fake_llm.stall(3.0)
    llm = OpenAIChat(fake_llm.base_url, "fake-model", timeout=0.3, idle_timeout=5.0)
    try:
        with pytest.raises(ModelUnavailable, match=r"timed out after 0\.3 s \(it sent nothing\)"):
            await llm.complete(HI)
    finally:
        await llm.close()
    assert len(fake_llm.requests) == 1  # a chat turn that timed out is not re-run


async def test_a_stream_that_goes_quiet_mid_answer_times_out_on_the_idle_timeout(
    fake_llm: FakeOpenAI,
) -> None:
    fake_llm.go_quiet("one two three four five", after=2, seconds=3.0)
    llm = OpenAIChat(fake_llm.base_url, "fake-model", timeout=5.0, idle_timeout=0.3)
    partial = PartialText()
    try:
        with pytest.raises(ModelUnavailable, match=r"went quiet for 0\.3 s"):
            await llm.complete(HI, partial=partial)
    finally:
        await llm.close()
    assert partial.visible() == "one two"


async def test_a_slow_steady_answer_may_take_longer_than_both_timeouts(
    fake_llm: FakeOpenAI,
) -> None:
    fake_llm.chunk_interval = 0.1
    fake_llm.reply("a b c d e f g h i j k l")  # about 1.1 s in all
    llm = OpenAIChat(fake_llm.base_url, "fake-model", timeout=0.6, idle_timeout=0.6)
    try:
        assert (await llm.complete(HI)).text == "a b c d e f g h i j k l"
    finally:
        await llm.close()


async def test_an_error_streamed_mid_answer_is_retried_like_an_overloaded_server(
    model: OpenAIChat, fake_llm: FakeOpenAI
) -> None:
    fake_llm.fail_mid_stream("Half an", "the model is overloaded, try again")
    fake_llm.reply("A whole answer.")
    partial = PartialText()
    assert (await model.complete(HI, partial=partial)).text == "A whole answer."
    assert partial.visible() == "A whole answer."  # the retry started the text afresh
    assert len(fake_llm.requests) == 2


async def test_an_error_streamed_mid_answer_that_no_retry_fixes_is_a_model_error(
    model: OpenAIChat, fake_llm: FakeOpenAI
) -> None:
    fake_llm.fail_mid_stream("Half an", "invalid value for temperature")
    with pytest.raises(ModelError, match="invalid value for temperature"):
        await model.complete(HI)
    assert len(fake_llm.requests) == 1


def test_partial_text_hides_a_thought_and_a_half_written_tag() -> None:
    async def run() -> list[str]:
        partial = PartialText()
        shown = []
        for piece in ("<thi", "nk>mulling", "</think>", "Sure", ", here <", "b>it</b> is"):
            partial.add(piece)
            shown.append(partial.visible())
        return shown

    assert asyncio.run(run()) == ["", "", "", "Sure", "Sure, here", "Sure, here <b>it</b> is"]
