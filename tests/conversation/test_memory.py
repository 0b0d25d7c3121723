"""Per-user memory on every platform: kept by sender, never by chat, and never evidence.

Each test runs once per channel (`DRIVERS`), on the real app over HTTP with the
platform's loopback fake and the fake model.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from gateway.config import Settings
from gateway.core.memory import MEMORY_CHARS
from tests.channels.drivers import DRIVERS, GROUP, Driver, running
from tests.console_support import sign_in
from tests.fakes.openai_server import FakeOpenAI
from tests.line_support import GROUP_ID

NAME = "my name is Alice"


@pytest.fixture(params=DRIVERS)
async def chat(
    request: pytest.FixtureRequest, make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> AsyncIterator[Driver]:
    async with running(request.param, make_settings, fake_llm) as driver:
        yield driver


def said(body: dict[str, Any]) -> str:
    """Everything a model request holds, as one text."""
    return json.dumps(body, ensure_ascii=False)


def group(chat: Driver) -> str:
    """The id the driver's group chat is read back by."""
    return str(GROUP) if chat.name == "telegram" else GROUP_ID


async def test_a_remembered_name_reaches_its_owner_only_and_a_group_only_after_opting_in(
    chat: Driver, fake_llm: FakeOpenAI
) -> None:
    await chat.say(f"/remember {NAME}")
    assert chat.texts()[-1] == f"📝 Remembered: “{NAME}”"
    await chat.say("hello")
    assert NAME in fake_llm.system_prompt()
    await chat.say("hello", user=chat.other)
    assert "Alice" not in said(fake_llm.requests[-1])

    await chat.say("what do you know about me?", group=True)
    assert "Alice" not in said(fake_llm.requests[-1])  # not opted in there yet
    await chat.say(f"/remember {NAME} too", group=True, addressed=False)
    assert "only after you allow it with /memory on" in chat.texts(group(chat))[-1]
    await chat.say("/memory on", group=True, addressed=False)
    await chat.say("what do you know about me?", group=True)
    assert NAME in fake_llm.system_prompt()
    await chat.say("and about me?", user=chat.other, group=True)
    assert "Alice" not in said(fake_llm.requests[-1])  # the same group, another sender

    await chat.say("/memory off", group=True, addressed=False)
    await chat.say("what do you know about me now?", group=True)
    assert "Alice" not in said(fake_llm.requests[-1])
    entries = await chat.parts.store.memory_entries(chat.name, chat.user)
    assert [e.text for e in entries] == [NAME]


async def test_the_remember_tool_keeps_an_entry_shows_it_and_never_feeds_synthesis(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    for name in DRIVERS:
        async with running(name, make_settings, fake_llm, session_idle_minutes=0) as chat:
            fake_llm.script.clear()
            fake_llm.tool_call("remember", text=NAME)
            fake_llm.reply("Nice to meet you, Alice.")
            await chat.say("please remember that my name is Alice")
            assert chat.texts()[-2:] == ["Nice to meet you, Alice.", f"📝 Remembered: “{NAME}”"]
            tools = [t["function"]["name"] for t in fake_llm.requests[-1]["tools"]]
            assert "remember" in tools
            await chat.press(chat.rating_data()[0])  # rated: a session synthesis would read
            await chat.say("how are you?")
            assert NAME in fake_llm.system_prompt()
            await chat.press(chat.rating_data()[0])
            key = "my key is sk-proj-abcdefghijklmnopqrstuvwxyz123456"
            fake_llm.tool_call("remember", text=key)
            fake_llm.reply("I can't keep that one.")
            await chat.say(f"remember {key}")
            assert fake_llm.requests[-1]["messages"][-1]["content"] == "error: not kept (secret)"
            assert chat.texts()[-1] == "I can't keep that one."  # nothing shown as kept
            kept = await chat.parts.store.memory_entries(chat.name, chat.user)
            assert [e.text for e in kept] == [NAME]
            await chat.say("/remember I like tea")
            before = len(fake_llm.requests)
            await chat.parts.synthesizer.run()
            synthesis = [said(b) for b in fake_llm.requests[before:]]
            assert synthesis, "synthesis asked the model nothing"
            assert any("how are you?" in s for s in synthesis)
            assert not any("Alice" in s or "tea" in s for s in synthesis)


async def test_forget_deletes_the_memory_and_no_later_request_holds_it(
    chat: Driver, fake_llm: FakeOpenAI
) -> None:
    await chat.say(f"/remember {NAME}")
    await chat.say("/memory on", group=True, addressed=False)
    await chat.say("/forget")
    await chat.press("forget:yes")
    assert await chat.parts.store.memory_entries(chat.name, chat.user) == []
    assert not await chat.parts.store.memory_opted_in(chat.name, group(chat), chat.user)
    start = len(fake_llm.requests)
    await chat.say("hello again")
    await chat.say("hello in the group", group=True)
    assert len(fake_llm.requests) == start + 2
    assert not any("Alice" in said(b) for b in fake_llm.requests[start:])


async def test_memory_lists_deletes_and_refuses_secrets_and_overlong_entries(
    chat: Driver, fake_llm: FakeOpenAI
) -> None:
    await chat.say("/memory")
    assert chat.texts()[-1].startswith("I remember nothing about you yet.")
    await chat.say("/remember x" + "y" * MEMORY_CHARS)
    assert chat.texts()[-1] == f"That is too long to remember: at most {MEMORY_CHARS} characters."
    await chat.say("/remember my key is sk-proj-abcdefghijklmnopqrstuvwxyz123456")
    assert chat.texts()[-1].startswith("I won't remember that")
    assert "sk-proj" not in chat.texts()[-1]
    await chat.say(f"/remember {NAME}")
    await chat.say("/remember I like tea")
    await chat.say("/memory")
    assert f"1. {NAME}\n2. I like tea" in chat.texts()[-1]
    await chat.say("/memory delete 1")
    await chat.say("/memory delete 7")
    assert chat.texts()[-1].startswith("There is no entry 7.")
    entries = await chat.parts.store.memory_entries(chat.name, chat.user)
    assert [e.text for e in entries] == ["I like tea"]
    await chat.say("/memory clear")
    assert await chat.parts.store.memory_entries(chat.name, chat.user) == []
    await chat.say("/memory", group=True, addressed=False)
    assert "private" in chat.texts(group(chat))[-1]  # never listed where others read


async def test_the_oldest_entries_go_when_the_memory_is_full_and_the_user_is_told(
    chat: Driver,
) -> None:
    entry = "a" * 700
    await chat.say(f"/remember {entry}")
    await chat.say(f"/remember {'b' * 700}")
    await chat.say(f"/remember {'c' * 700}")
    assert chat.texts()[-1].endswith("To make room, I forgot your oldest entry.")
    entries = await chat.parts.store.memory_entries(chat.name, chat.user)
    assert [e.text[0] for e in entries] == ["b", "c"]
    assert sum(len(e.text) for e in entries) <= MEMORY_CHARS


async def test_the_console_shows_a_users_memory_on_the_users_page(chat: Driver) -> None:
    await chat.say(f"/remember {NAME}")
    await chat.say("/remember <b>bold</b> I like tea")
    await sign_in(chat.client)
    page = await chat.client.get(f"/admin/users/memory?channel={chat.name}&user={chat.user}")
    html = await page.text()
    assert page.status == 200
    assert f"<li>{NAME}</li>" in html and "&lt;b&gt;bold&lt;/b&gt; I like tea" in html
    other = await chat.client.get(f"/admin/users/memory?channel={chat.name}&user={chat.other}")
    assert "Alice" not in await other.text()
    assert (await chat.client.get("/admin/users/memory?channel=skype&user=1")).status == 400
