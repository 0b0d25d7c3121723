"""Group context on every platform: a group's unaddressed lines go with its next question once.

Each test runs once per channel (`DRIVERS`), on the real app over HTTP with the
platform's loopback fake and the fake model.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from gateway.config import Settings
from gateway.store.sql import Conn
from tests.channels.drivers import DRIVERS, Driver, running
from tests.fakes.openai_server import FakeOpenAI

NAMES = {"telegram": ("Alice", "Bob"), "line": ("Member 1", "Member 2")}
"""How the two users are named to the model (LINE gives no display name in a webhook)."""


@pytest.fixture(params=DRIVERS)
async def chat(
    request: pytest.FixtureRequest, make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> AsyncIterator[Driver]:
    async with running(request.param, make_settings, fake_llm, group_context_messages=20) as driver:
        yield driver


async def kept_lines(chat: Driver) -> list[dict[str, Any]]:
    async def work(c: Conn) -> list[dict[str, Any]]:
        return await c.fetch("select user_id, text from group_lines order by id")

    return await chat.parts.store._run(work, transaction=False)


async def chatter(chat: Driver, count: int) -> None:
    """`count` unaddressed messages in the group, the two users taking turns."""
    for n in range(1, count + 1):
        await chat.say(
            f"line {n:02d}", user=chat.user if n % 2 else chat.other, group=True, addressed=False
        )


async def test_the_last_lines_go_fenced_with_names_before_the_question_and_only_once(
    chat: Driver, fake_llm: FakeOpenAI
) -> None:
    await chatter(chat, 30)
    assert fake_llm.requests == []  # nothing unaddressed is answered
    await chat.say("what do you think of what was just said?", group=True)
    messages = fake_llm.requests[-1]["messages"]
    context, question = messages[-2], messages[-1]
    assert question == {"role": "user", "content": "what do you think of what was just said?"}
    assert context["role"] == "user" and "<untrusted-chat" in context["content"]
    first, second = NAMES[chat.name]
    shown = [line for line in context["content"].splitlines() if ": line " in line]
    expected = [f"{second if n % 2 == 0 else first}: line {n:02d}" for n in range(11, 31)]
    assert shown == expected
    assert "line 10" not in json.dumps(messages)
    assert "line 2" not in messages[0]["content"]  # never in the system prompt
    assert await kept_lines(chat) == []  # cleared once used

    await chat.say("and now?", group=True)
    assert "line " not in json.dumps(fake_llm.requests[-1]["messages"])


async def test_forget_deletes_the_users_kept_lines_and_synthesis_never_sees_them(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    for name in DRIVERS:
        settings = {"group_context_messages": 20, "session_idle_minutes": 0}
        async with running(name, make_settings, fake_llm, **settings) as chat:
            await chatter(chat, 4)
            await chat.say("/forget")
            await chat.press("forget:yes")
            assert [r["user_id"] for r in await kept_lines(chat)] == [chat.other, chat.other]
            await chat.say("summarise please", group=True)
            assert "line 01" not in json.dumps(fake_llm.requests[-1])
            assert "line 02" in json.dumps(fake_llm.requests[-1])
            await chat.say("hello in private")
            await chat.press(chat.rating_data()[0])  # a rated session for synthesis to read
            before = len(fake_llm.requests)
            await chat.parts.synthesizer.run()
            synthesis = [json.dumps(b) for b in fake_llm.requests[before:]]
            assert synthesis and any("hello in private" in s for s in synthesis)
            assert not any("line 0" in s for s in synthesis)


async def test_with_group_context_off_no_unaddressed_message_is_stored(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    for name in DRIVERS:
        async with running(name, make_settings, fake_llm) as chat:
            await chatter(chat, 30)
            await chat.say("anything new?", group=True)
            assert await kept_lines(chat) == []
            assert "line " not in json.dumps(fake_llm.requests[-1])


async def test_an_outsiders_unaddressed_lines_are_never_kept_nor_shown_to_the_model(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    # The allowlist names only `other`: `user`'s lines in the group (the third hostile
    # review: one made an admin tool run on an admin's turn) are not context.
    for name in DRIVERS:
        settings = {"group_context_messages": 20}
        async with running(name, make_settings, fake_llm, only_other=True, **settings) as chat:
            await chatter(chat, 4)
            assert [r["user_id"] for r in await kept_lines(chat)] == [chat.other, chat.other]
            await chat.say("what was said?", user=chat.other, group=True)
            told = json.dumps(fake_llm.requests[-1]["messages"])
            assert "line 02" in told and "line 04" in told
            assert "line 01" not in told and "line 03" not in told
