"""Tools from a Streamable HTTP server: offered by policy, bounded in time and size, traced."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from gateway.config import Settings
from gateway.core.models import ChatRef, IncomingMessage
from gateway.core.tools import AskedCall, ToolAccess
from gateway.runtime.assembly import Parts, close_parts, open_parts
from tests.fakes.openai_server import FakeOpenAI, Scripted
from tests.tools.http_server import BIG, ToyServer
from tests.tools.support import tool_names, tools_file

CHAT = ChatRef(channel="console", chat_id="c1", user_id="u1")
GROUP = ChatRef(channel="console", chat_id="g1", user_id="u1", is_group=True)


async def always(tool: str, call: AskedCall) -> bool:
    return True


@pytest.fixture
async def toy() -> AsyncIterator[ToyServer]:
    async with ToyServer().running() as server:
        yield server


@pytest.fixture
def gateway(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, tmp_path: Path, toy: ToyServer
) -> Callable[..., Any]:
    """Parts whose tools file lists the toy server, started; `server` adds to its entry."""

    @asynccontextmanager
    async def start(settings: dict[str, Any] | None = None, **server: Any) -> AsyncIterator[Parts]:
        entry = {"url": toy.url, "trusted": True, **server}
        path = tools_file(tmp_path, servers={"toy": entry})
        settings = make_settings(
            llm_base_url=fake_llm.base_url,
            llm_model="fake-model",
            tools_file=path,
            tool_call_timeout_seconds=0.5,
            **(settings or {}),
        )
        parts = await open_parts(settings)
        assert parts.tools is not None
        await parts.tools.start()
        try:
            yield parts
        finally:
            await close_parts(parts)

    return start


async def ask(parts: Parts, text: str, chat: ChatRef = CHAT, **access: Any) -> Any:
    reply = await parts.agent.respond(
        IncomingMessage(chat=chat, text=text), access=ToolAccess(group=chat.is_group, **access)
    )
    trace = await parts.store.get_trace(reply.message_id or 0)
    assert trace is not None
    return reply, trace


async def test_a_call_that_hangs_is_cut_off_and_the_user_still_gets_an_answer(
    gateway: Callable[..., Any], fake_llm: FakeOpenAI, toy: ToyServer
) -> None:
    fake_llm.tool_call("toy__hang")
    fake_llm.reply("The tool did not answer; here is what I know.")
    async with gateway() as parts:
        reply, trace = await ask(parts, "use the slow tool")
    assert reply.text == "The tool did not answer; here is what I know."
    assert toy.calls == [("hang", {})]
    told = fake_llm.requests[1]["messages"][-1]["content"]
    assert told.startswith("error: timeout: no answer within 0.5 s")
    [call] = trace.tool_calls
    assert call.status == "timeout" and call.result_chars == 0


async def test_a_200000_character_result_reaches_the_model_capped_head_and_tail(
    gateway: Callable[..., Any], fake_llm: FakeOpenAI
) -> None:
    fake_llm.tool_call("toy__big")
    fake_llm.reply("That was long.")
    async with gateway() as parts:
        _, trace = await ask(parts, "fetch the long thing")
    told = fake_llm.requests[1]["messages"][-1]["content"]
    assert len(told) < 17_000  # 16 KB of result, and the fence around it
    assert "HEAD" in told and "TAIL" in told
    assert "characters of the tool's result left out" in told
    [call] = trace.tool_calls
    assert call.result_chars == BIG and call.capped and call.status == "ok"


async def test_an_admin_tool_is_offered_to_admins_only_and_refused_to_others_when_called(
    gateway: Callable[..., Any], fake_llm: FakeOpenAI, toy: ToyServer
) -> None:
    fake_llm.reply("hello")
    fake_llm.reply("hello, admin")
    # The model calls it anyway (a stale tool list, a made-up call): the policy holds.
    fake_llm.tool_call("toy__echo", text="sneaky")
    fake_llm.reply("I cannot use that.")
    async with gateway(tools={"echo": {"policy": "admin"}}) as parts:
        await ask(parts, "hi")
        await ask(parts, "hi", admin=True, confirm=always)
        _, trace = await ask(parts, "echo something")
    user, admin, _, _ = fake_llm.requests
    assert "toy__echo" not in tool_names(user)
    assert "toy__echo" in tool_names(admin)
    assert toy.calls == []
    [call] = trace.tool_calls
    assert (call.tool, call.status, call.detail) == (
        "echo",
        "refused",
        "only admins may use this tool",
    )


async def test_a_group_gets_no_tools_unless_the_entry_allows_groups(
    gateway: Callable[..., Any], fake_llm: FakeOpenAI
) -> None:
    fake_llm.reply("no tools here")
    async with gateway() as parts:
        await ask(parts, "hi all", chat=GROUP)
    fake_llm.reply("tools here")
    async with gateway(groups="allow") as parts:
        await ask(parts, "hi all", chat=GROUP)
    assert [n for n in tool_names(fake_llm.requests[0]) if n.startswith("toy__")] == []
    assert "toy__echo" in tool_names(fake_llm.requests[1])


async def test_tools_that_change_things_are_not_offered_where_no_one_can_confirm(
    gateway: Callable[..., Any], fake_llm: FakeOpenAI
) -> None:
    fake_llm.reply("ok")
    fake_llm.reply("ok")
    async with gateway() as parts:
        await ask(parts, "take a note")
        await ask(parts, "take a note", confirm=always)
    assert "toy__note" not in tool_names(fake_llm.requests[0])
    assert "toy__echo" in tool_names(fake_llm.requests[0])  # read-only, trusted: auto
    assert "toy__note" in tool_names(fake_llm.requests[1])


async def test_headers_come_from_the_environment_and_never_from_the_file(
    gateway: Callable[..., Any], fake_llm: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOY_AUTH", "Bearer toy-token-123")
    fake_llm.tool_call("toy__whoami")
    fake_llm.reply("done")
    async with gateway(headers={"Authorization": "TOY_AUTH"}) as parts:
        _, trace = await ask(parts, "who am I?")
    assert "Bearer toy-token-123" in fake_llm.requests[1]["messages"][-1]["content"]
    assert trace.tool_calls[0].status == "ok"


async def test_tools_are_listed_again_when_the_server_says_they_changed(
    gateway: Callable[..., Any], fake_llm: FakeOpenAI
) -> None:
    fake_llm.tool_call("toy__grow")
    fake_llm.reply("grown")
    fake_llm.reply("hello")
    async with gateway() as parts:
        assert parts.tools is not None
        await ask(parts, "grow")
        async with asyncio.timeout(5):  # listed again by the server's own task
            while "toy__fresh" not in [e.name for e in parts.tools.entries()]:
                await asyncio.sleep(0.01)
        await ask(parts, "hi")
    assert "toy__fresh" not in tool_names(fake_llm.requests[0])
    assert "toy__fresh" in tool_names(fake_llm.requests[2])


async def test_calls_past_the_rounds_limit_are_not_made_and_the_model_is_told(
    gateway: Callable[..., Any], fake_llm: FakeOpenAI, toy: ToyServer
) -> None:
    # Six calls in one answer (the review's six hanging calls held a chat): three are made.
    fake_llm.script.append(Scripted(tool_calls=[("toy__echo", {"text": f"{n}"}) for n in range(6)]))
    fake_llm.reply("Three of them.")
    async with gateway() as parts:
        _, trace = await ask(parts, "echo six times")
    assert toy.calls == [("echo", {"text": f"{n}"}) for n in range(3)]
    assert [c.status for c in trace.tool_calls] == ["ok"] * 3 + ["refused"] * 3
    told = [m["content"] for m in fake_llm.requests[1]["messages"] if m["role"] == "tool"]
    assert all("SKILLGATE_TOOL_CALLS_PER_ROUND" in t for t in told[3:])


async def test_calls_past_the_turns_limit_are_not_made_over_all_rounds(
    gateway: Callable[..., Any], fake_llm: FakeOpenAI, toy: ToyServer
) -> None:
    for round_ in range(3):
        calls = [("toy__echo", {"text": f"{round_}.{n}"}) for n in range(2)]
        fake_llm.script.append(Scripted(tool_calls=calls))
    fake_llm.reply("Enough.")
    async with gateway(settings={"tool_calls_per_turn": 5}) as parts:
        _, trace = await ask(parts, "echo a lot")
    assert len(toy.calls) == 5
    assert [c.status for c in trace.tool_calls] == ["ok"] * 5 + ["refused"]
    last = [m["content"] for m in fake_llm.requests[3]["messages"] if m["role"] == "tool"][-1]
    assert "SKILLGATE_TOOL_CALLS_PER_TURN" in last


async def test_an_admin_tool_asks_the_admin_first_unless_the_setting_says_otherwise(
    gateway: Callable[..., Any], fake_llm: FakeOpenAI, toy: ToyServer
) -> None:
    asked: list[str] = []

    async def no(tool: str, call: AskedCall) -> bool:
        asked.append(call.text)
        return False

    policy = {"tools": {"note": {"policy": "admin"}}}
    for _ in range(2):
        fake_llm.tool_call("toy__note", text="reset everything")
        fake_llm.reply("Done.")
    async with gateway(**policy) as parts:
        _, declined = await ask(parts, "reset", admin=True, confirm=no)
        _, unasked = await ask(parts, "reset", admin=True)  # nobody to ask: not run
    assert asked == ['• text: "reset everything"']
    assert [c.status for c in declined.tool_calls] == ["declined"]
    assert [c.status for c in unasked.tool_calls] == ["refused"]
    assert toy.notes == []
    fake_llm.tool_call("toy__note", text="reset everything")
    fake_llm.reply("Done.")
    async with gateway(settings={"tool_admin_confirm": False}, **policy) as parts:
        _, trace = await ask(parts, "reset", admin=True)
    assert [c.status for c in trace.tool_calls] == ["ok"]
    assert toy.notes == ["reset everything"]
