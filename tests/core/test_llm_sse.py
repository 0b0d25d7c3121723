"""The streamed model call reads every event-stream framing servers send, on one connection."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from gateway.core.llm import OpenAIChat
from gateway.core.llm_stream import EventStream
from gateway.errors import ModelError
from tests.fakes.openai_server import FakeOpenAI

HI = [{"role": "user", "content": "hi"}]
TOOLS = [{"type": "function", "function": {"name": "load_skill", "parameters": {}}}]


def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return json.dumps({"object": "chat.completion.chunk", "choices": [choice], **extra})


EVENTS = [
    chunk({"role": "assistant", "content": ""}),
    chunk({"content": "Hello "}),
    chunk({"content": "there."}),
    chunk({}, "stop"),
    json.dumps({"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 3}}),
]


def framed(end: str, *, comments: bool = False, space: str = " ") -> bytes:
    """EVENTS as one event stream with `end` as the line ending."""
    lines = [": keep-alive" + end] if comments else []
    for event in EVENTS:
        lines.append(f"data:{space}{event}{end}{end}")
        if comments:
            lines.append(": OPENROUTER PROCESSING" + end + end)
    lines.append(f"data: [DONE]{end}{end}")
    return "".join(lines).encode()


# One event's JSON over two data lines (joined with a line feed, which JSON allows).
MULTI_LINE = b"data: " + EVENTS[1].encode().replace(b", ", b",\ndata: ", 1) + b"\n\n"


@pytest.fixture
async def model(fake_llm: FakeOpenAI) -> AsyncIterator[OpenAIChat]:
    llm = OpenAIChat(fake_llm.base_url, "fake-model", "sk-test-key-123456", backoff=0)
    yield llm
    await llm.close()


@pytest.mark.parametrize(
    "stream",
    [
        framed("\n"),
        framed("\r\n"),
        framed("\r"),
        framed("\r\n", comments=True),
        framed("\n", space=""),
        framed("\n").removesuffix(b"data: [DONE]\n\n").rstrip(b"\n"),  # no [DONE], no blank
        MULTI_LINE + framed("\n"),
    ],
    ids=["lf", "crlf", "cr", "keep-alives", "no-space", "no-done", "multi-line"],
)
async def test_every_framing_of_the_stream_gives_the_same_answer(
    model: OpenAIChat, fake_llm: FakeOpenAI, stream: bytes
) -> None:
    # Split into small pieces, CRLFs and data lines cut in half, as a network may deliver them.
    fake_llm.raw_stream(*(stream[i : i + 7] for i in range(0, len(stream), 7)))
    completion = await model.complete(HI)
    assert completion.text is not None and completion.text.endswith("Hello there.")
    assert completion.finish_reason == "stop"
    assert (completion.prompt_tokens, completion.completion_tokens) == (7, 3)


@pytest.mark.parametrize(
    ("stream", "events"),
    [
        (framed("\n"), EVENTS),
        (framed("\r\n", comments=True), EVENTS),
        (framed("\n", comments=True), EVENTS),
        (framed("\n", space=""), EVENTS),
        (MULTI_LINE + framed("\n"), [EVENTS[1], *EVENTS]),
    ],
    ids=["lf", "crlf-keep-alives", "lf-keep-alives", "no-space", "multi-line"],
)
def test_the_events_are_the_same_wherever_the_bytes_are_split(
    stream: bytes, events: list[str]
) -> None:
    expected = [json.loads(e) for e in events]
    for cut in range(len(stream) + 1):
        decoder = EventStream()
        found = [*decoder.feed(stream[:cut]), *decoder.feed(stream[cut:]), *decoder.end()]
        assert [json.loads(e) for e in found] == expected, cut
        assert decoder.done, cut


@pytest.mark.parametrize(
    "message",
    [
        {"role": "assistant", "content": "<think>Mulling it over.</think>Plain answer."},
        {"role": "assistant", "content": [{"type": "text", "text": "Two "}, {"text": "parts."}]},
        {
            "role": "assistant",
            "content": None,
            "reasoning_content": "The skill fits.",
            "tool_calls": [
                {
                    "id": "call_9",
                    "type": "function",
                    "function": {"name": "load_skill", "arguments": '{"name": "summarize-text"}'},
                }
            ],
        },
        {"role": "assistant", "content": None, "function_call": {"name": "load_skill"}},
    ],
    ids=["think", "parts", "tool-call", "legacy-call"],
)
async def test_a_streamed_answer_is_the_same_answer_as_the_whole_one(
    model: OpenAIChat, fake_llm: FakeOpenAI, message: dict[str, Any]
) -> None:
    fake_llm.reply_message(message)
    fake_llm.reply_message(message)
    streamed = await model.complete(HI, tools=TOOLS)
    model.streaming = False
    whole = await model.complete(HI, tools=TOOLS)
    assert [body.get("stream", False) for body in fake_llm.requests] == [True, False]
    if message.get("function_call"):  # a legacy call has no id: each answer gets a fresh one
        for completion in (streamed, whole):
            completion.tool_calls[0].id = "legacy"
    assert streamed.model_dump(exclude={"usage_known"}) == whole.model_dump(exclude={"usage_known"})
    assert streamed.text is not None or streamed.tool_calls


async def test_answers_one_after_another_reuse_one_connection_and_send_the_key(
    model: OpenAIChat, fake_llm: FakeOpenAI
) -> None:
    for _ in range(3):
        assert (await model.complete(HI)).text == "Hello from the fake model."
    assert len(set(fake_llm.peers)) == 1  # each stream read to its end, back to the pool
    assert {h.get("Authorization") for h in fake_llm.headers} == {"Bearer sk-test-key-123456"}


async def test_a_chunk_that_is_not_json_is_a_model_error_not_a_crash(
    model: OpenAIChat, fake_llm: FakeOpenAI
) -> None:
    fake_llm.raw_stream(b"data: " + EVENTS[1].encode() + b"\n\n", b"data: {half a chunk\n\n")
    with pytest.raises(ModelError, match="streamed a chunk that is not JSON"):
        await model.complete(HI)


async def test_a_connection_cut_mid_answer_is_asked_again_and_answered(
    model: OpenAIChat, fake_llm: FakeOpenAI
) -> None:
    fake_llm.raw_stream(b"data: " + EVENTS[1].encode() + b"\n\n", cut=True)
    fake_llm.reply("A whole answer.")
    assert (await model.complete(HI)).text == "A whole answer."
    assert len(fake_llm.requests) == 2
