"""The agent against the response shapes and errors real OpenAI-compatible servers send."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from gateway.config import Settings
from gateway.core.agent import APOLOGY, CUT_MARK, FILTERED, MODEL_DOWN, TOO_LONG
from gateway.core.models import ChatRef, IncomingMessage
from gateway.runtime.assembly import Parts, close_parts, open_parts
from tests.console_support import sign_in
from tests.fakes.openai_server import FakeOpenAI
from tests.serve_process import free_port
from tests.synthesis_support import gateway

CHAT = ChatRef(channel="console", chat_id="c1", user_id="u1")
SKILL_QUESTION = "Please summarize this text for me"


@pytest.fixture
async def parts(settings: Settings) -> AsyncIterator[Parts]:
    parts = await open_parts(settings)
    yield parts
    await close_parts(parts)


def say(text: str) -> IncomingMessage:
    return IncomingMessage(chat=CHAT, text=text)


def call(arguments: Any, **extra: Any) -> dict[str, Any]:
    return {"type": "function", "function": {"name": "load_skill", "arguments": arguments}, **extra}


async def traced(parts: Parts, message_id: int | None) -> Any:
    trace = await parts.store.get_trace(message_id or 0)
    assert trace is not None
    return trace


async def test_a_tool_call_without_id_and_with_object_arguments_still_loads_the_skill(
    parts: Parts, fake_llm: FakeOpenAI
) -> None:
    fake_llm.reply_message(
        {"role": "assistant", "content": None, "tool_calls": [call({"name": "summarize-text"})]},
        finish_reason="tool_calls",
    )
    fake_llm.reply("Gist: ...")
    reply = await parts.agent.respond(say(SKILL_QUESTION))
    assert reply.text == "Gist: ..." and reply.kind == "normal"
    second = fake_llm.requests[1]["messages"]
    assistant, tool = second[-2], second[-1]
    assert assistant["content"] == ""  # never null: llama-cpp-python refuses it
    assert assistant["tool_calls"][0]["id"] == tool["tool_call_id"] != ""
    assert "one-sentence gist" in tool["content"]
    assert (await traced(parts, reply.message_id)).skills_loaded == ["summarize-text"]


async def test_content_as_a_list_of_parts_is_joined(parts: Parts, fake_llm: FakeOpenAI) -> None:
    parts_content = [{"type": "text", "text": "Hello "}, {"type": "text", "text": "there."}]
    fake_llm.reply_message({"role": "assistant", "content": parts_content})
    reply = await parts.agent.respond(say("hi"))
    assert reply.text == "Hello there." and reply.kind == "normal"


@pytest.mark.parametrize(
    "body",
    [
        "<html>Bad gateway</html>",
        {"choices": []},
        {"choices": [{"message": {"role": "assistant", "content": {"odd": True}}}]},
        {"choices": [{"message": {"tool_calls": [{"function": {"arguments": "{}"}}]}}]},
        [1, 2, 3],
    ],
    ids=["not-json", "no-choices", "odd-content", "nameless-call", "a-list"],
)
async def test_an_unusable_response_still_gets_the_user_a_reply(
    parts: Parts, fake_llm: FakeOpenAI, body: Any
) -> None:
    fake_llm.raw(body)
    reply = await parts.agent.respond(say("hi"))
    assert reply.text == APOLOGY and reply.kind == "error"
    trace = await traced(parts, reply.message_id)
    assert trace.completed is False and trace.error and trace.error.startswith("model ")


async def test_tools_are_sent_with_tool_choice_auto_and_names_limited_to_the_offer(
    parts: Parts, fake_llm: FakeOpenAI
) -> None:
    await parts.agent.respond(say(SKILL_QUESTION))
    sent = fake_llm.requests[0]
    assert sent["tool_choice"] == "auto"
    name = sent["tools"][0]["function"]["parameters"]["properties"]["name"]
    assert "summarize-text" in name["enum"]
    assert sent["max_tokens"] > 0


async def test_after_the_last_tool_round_one_final_call_goes_without_tools(
    parts: Parts, fake_llm: FakeOpenAI, settings: Settings
) -> None:
    rounds = parts.agent.config.max_tool_rounds
    for _ in range(rounds + 1):
        fake_llm.tool_call("load_skill", name="summarize-text")
    reply = await parts.agent.respond(say(SKILL_QUESTION))
    assert len(fake_llm.requests) == rounds + 1
    assert "tools" not in fake_llm.requests[-1]
    assert all("tools" in r for r in fake_llm.requests[:-1])
    # The final call answered a tool call rather than text: it is still a model error, said so.
    assert reply.kind == "error"
    fake_llm.tool_call("load_skill", name="summarize-text")
    fake_llm.reply("Here is the gist.")
    assert (await parts.agent.respond(say(SKILL_QUESTION))).text == "Here is the gist."


async def test_reasoning_goes_back_within_the_tool_round_only_and_is_never_shown(
    parts: Parts, fake_llm: FakeOpenAI
) -> None:
    fake_llm.reply_message(
        {
            "role": "assistant",
            "content": "",
            "reasoning_content": "I should load the skill.",
            "tool_calls": [call('{"name": "summarize-text"}', id="c1")],
        },
        finish_reason="tool_calls",
    )
    fake_llm.reply_message(
        {"role": "assistant", "content": "The gist.", "reasoning": "Now I answer briefly."}
    )
    reply = await parts.agent.respond(say(SKILL_QUESTION))
    assert reply.text == "The gist."
    assert fake_llm.requests[1]["messages"][-2]["reasoning_content"] == "I should load the skill."
    fake_llm.reply("Next.")
    await parts.agent.respond(say("and another thing"))
    later = str(fake_llm.requests[-1]["messages"])
    assert "load the skill" not in later and "answer briefly" not in later


async def test_think_blocks_are_stripped_before_showing_storing_and_history(
    parts: Parts, fake_llm: FakeOpenAI
) -> None:
    fake_llm.reply("<think>The user greets me. I greet back.</think>\n\nHello!")
    reply = await parts.agent.respond(say("hi"))
    assert reply.text == "Hello!"
    stored = await parts.store.get_message(reply.message_id or 0)
    assert stored is not None and stored.text == "Hello!"
    fake_llm.reply("<think>unfinished thought that never closes")
    cut = await parts.agent.respond(say("again"))
    assert cut.kind == "error"  # nothing but thinking: no answer to show
    fake_llm.reply("Fine.")
    await parts.agent.respond(say("third"))
    assert "<think>" not in str(fake_llm.requests[-1]["messages"])


async def test_a_refusal_keeps_the_servers_words_in_the_trace_with_secrets_masked(
    parts: Parts, fake_llm: FakeOpenAI
) -> None:
    fake_llm.error(400, message="Invalid value for temperature; key sk-abcdefghijklmnop123 used")
    reply = await parts.agent.respond(say("hi"))
    assert reply.text == APOLOGY
    trace = await traced(parts, reply.message_id)
    assert "HTTP 400" in trace.error and "Invalid value for temperature" in trace.error
    assert "sk-abcdefghijklmnop123" not in trace.error


async def test_context_overflow_retries_once_with_half_the_history(
    parts: Parts, fake_llm: FakeOpenAI
) -> None:
    for i in range(6):
        await parts.agent.respond(say(f"question {i} " + "word " * 200))
    sent_before = len(fake_llm.requests)
    fake_llm.error(400, message="This model's maximum context length is 4096 tokens.")
    fake_llm.reply("Short answer.")
    reply = await parts.agent.respond(say("one more"))
    assert reply.text == "Short answer."
    full, halved = fake_llm.requests[sent_before:]
    assert len(halved["messages"]) < len(full["messages"])
    assert halved["messages"][-1] == full["messages"][-1]


async def test_a_second_context_overflow_tells_the_user_to_start_afresh(
    parts: Parts, fake_llm: FakeOpenAI
) -> None:
    fake_llm.error(400, times=2, message="the request exceeds the available context size")
    reply = await parts.agent.respond(say("hi"))
    assert reply.text == TOO_LONG and "/new" in reply.text and reply.kind == "error"


async def test_tools_refused_are_dropped_for_the_process_and_said_in_the_trace(
    parts: Parts, fake_llm: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    fake_llm.error(400, message='"auto" tool choice requires --enable-auto-tool-choice')
    fake_llm.reply("Answered without skills.")
    reply = await parts.agent.respond(say(SKILL_QUESTION))
    assert reply.text == "Answered without skills." and reply.kind == "normal"
    assert "tools" in fake_llm.requests[0] and "tools" not in fake_llm.requests[1]
    trace = await traced(parts, reply.message_id)
    assert any("enable-auto-tool-choice" in n for n in trace.notes)
    await parts.agent.respond(say(SKILL_QUESTION))
    assert "tools" not in fake_llm.requests[2]
    assert sum("refuses tools" in r.message for r in caplog.records) == 1


async def test_a_retryable_error_inside_a_200_is_retried(
    parts: Parts, fake_llm: FakeOpenAI
) -> None:
    fake_llm.raw({"error": {"message": "Provider returned error: overloaded", "code": 502}})
    fake_llm.reply("Recovered.")
    reply = await parts.agent.respond(say("hi"))
    assert reply.text == "Recovered." and len(fake_llm.requests) == 2


async def test_an_endpoint_wanting_max_completion_tokens_gets_it(
    parts: Parts, fake_llm: FakeOpenAI
) -> None:
    fake_llm.error(
        400,
        message="Unsupported parameter: 'max_tokens' is not supported with this model."
        " Use 'max_completion_tokens' instead.",
    )
    fake_llm.reply("Fine.")
    assert (await parts.agent.respond(say("hi"))).text == "Fine."
    retried = fake_llm.requests[1]
    assert "max_tokens" not in retried and retried["max_completion_tokens"] > 0


async def test_a_cut_answer_is_marked_and_traced(parts: Parts, fake_llm: FakeOpenAI) -> None:
    fake_llm.cut("The first half of a long")
    reply = await parts.agent.respond(say("tell me everything"))
    assert reply.text.endswith(CUT_MARK) and reply.kind == "normal"
    assert (await traced(parts, reply.message_id)).finish_reason == "length"


async def test_a_filtered_answer_is_explained(parts: Parts, fake_llm: FakeOpenAI) -> None:
    fake_llm.cut("", finish_reason="content_filter")
    reply = await parts.agent.respond(say("something"))
    assert reply.text == FILTERED and reply.kind == "error"
    assert (await traced(parts, reply.message_id)).finish_reason == "content_filter"


async def test_llm_max_tokens_is_sent(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = make_settings(llm_base_url=fake_llm.base_url, llm_model="m", llm_max_tokens=77)
    parts = await open_parts(settings)
    try:
        await parts.agent.respond(say("hi"))
    finally:
        await close_parts(parts)
    assert fake_llm.requests[0]["max_tokens"] == 77


async def test_the_console_shows_the_servers_words_the_finish_reason_and_notes(
    settings: Settings, fake_llm: FakeOpenAI
) -> None:
    async with gateway(settings) as gw:
        fake_llm.error(400, message="Invalid 'messages[1].content': expected a string")
        await gw.parts.agent.respond(say("first"))
        fake_llm.error(400, message="model does not support tools")
        fake_llm.cut("A long answer that")
        await gw.parts.agent.respond(say(SKILL_QUESTION))
        await sign_in(gw.client)
        page = await (await gw.client.get("/admin/conversations/1")).text()
    assert "HTTP 400: Invalid &#39;messages[1].content&#39;: expected a string" in page
    assert "finish: length" in page
    assert "tools not sent: the server refused them (model does not support tools)" in page


async def test_a_failed_tool_generation_is_answered_without_tools_this_once(
    parts: Parts, fake_llm: FakeOpenAI
) -> None:
    groq = "Failed to call a function. Please adjust your prompt. (tool_use_failed)"
    fake_llm.error(400, message=groq)
    fake_llm.reply("Plain answer.")
    reply = await parts.agent.respond(say(SKILL_QUESTION))
    assert reply.text == "Plain answer." and "tools" not in fake_llm.requests[1]
    await parts.agent.respond(say(SKILL_QUESTION))
    assert "tools" in fake_llm.requests[2]  # not a lasting refusal: tools are offered again


async def test_a_refused_connection_and_a_missing_v1_are_named_in_the_trace(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    for url, expected in (
        (f"http://127.0.0.1:{free_port()}/v1", "connection refused"),
        (fake_llm.base_url.removesuffix("/v1"), "does LLM_BASE_URL end in /v1?"),
    ):
        settings = make_settings(llm_base_url=url, llm_model="m", llm_max_retries=0)
        parts = await open_parts(settings)
        try:
            reply = await parts.agent.respond(say("hi"))
            trace = await traced(parts, reply.message_id)
        finally:
            await close_parts(parts)
        # The operator's to fix: waiting would not help, and the user is told so.
        assert reply.text == MODEL_DOWN and expected in trace.error
