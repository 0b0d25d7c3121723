"""Per-chat personas on every platform: set by the chat's admins, used in that chat only.

Telegram's group admins are who getChatMember says; LINE names none, so there Skillgate's
admins (LINE_ADMIN_IDS) decide.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from gateway.config import Settings
from gateway.core.persona import PERSONA_CHARS
from tests.channels.drivers import DRIVERS, GROUP, Driver, LineDriver, TelegramDriver, running
from tests.console_support import sign_in
from tests.fakes.openai_server import FakeOpenAI
from tests.line_support import GROUP_ID

PIRATE = "Speak like a pirate, matey."


@pytest.fixture(params=DRIVERS)
async def chat(
    request: pytest.FixtureRequest, make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> AsyncIterator[Driver]:
    """The default user administers the group; the other user does not."""
    admins = {"line_admin_ids": [LineDriver.user]} if request.param == "line" else {}
    async with running(request.param, make_settings, fake_llm, **admins) as driver:
        if isinstance(driver, TelegramDriver):
            driver.gw.fake.chat_admins[GROUP] = {int(driver.user)}
        yield driver


def group(chat: Driver) -> str:
    return str(GROUP) if chat.name == "telegram" else GROUP_ID


async def answer_trace_hash(chat: Driver, where: str) -> str | None:
    answer_id = int(chat.rating_data(where)[0].split(":")[1])
    trace = await chat.parts.store.get_trace(answer_id)
    assert trace is not None
    return trace.persona_hash


async def test_an_admins_persona_reaches_only_that_groups_requests_after_the_operators(
    chat: Driver, fake_llm: FakeOpenAI
) -> None:
    await chat.say(f"/persona {PIRATE}", group=True, addressed=False)
    assert PIRATE in chat.texts(group(chat))[-1]
    await chat.say("hello", user=chat.other, group=True)
    system = fake_llm.system_prompt()
    operator = chat.parts.agent.config.persona.strip()
    assert system.startswith(operator)
    assert system.index(operator) < system.index(PIRATE)
    assert 'source="chat-persona"' in system
    in_group = await answer_trace_hash(chat, group(chat))
    await chat.say("hello")
    assert PIRATE not in fake_llm.system_prompt()
    alone = await answer_trace_hash(chat, chat.user)
    assert in_group and alone and in_group != alone

    await chat.say("/persona", user=chat.other, group=True, addressed=False)
    assert PIRATE in chat.texts(group(chat))[-1]  # anyone there may see it
    await chat.say("/persona clear", group=True, addressed=False)
    await chat.say("hello again", group=True)
    assert PIRATE not in fake_llm.system_prompt()


async def test_a_non_admins_persona_and_bad_texts_are_refused_and_change_nothing(
    chat: Driver, fake_llm: FakeOpenAI
) -> None:
    await chat.say(f"/persona {PIRATE}", group=True, addressed=False)
    await chat.say("/persona Be rude to everyone.", user=chat.other, group=True, addressed=False)
    assert chat.texts(group(chat))[-1] == "Only this chat's admins can change its persona."
    await chat.say("/persona clear", user=chat.other, group=True, addressed=False)
    await chat.say("/persona " + "x" * (PERSONA_CHARS + 1), group=True, addressed=False)
    assert chat.texts(group(chat))[-1] == (
        f"That persona is too long: at most {PERSONA_CHARS} characters."
    )
    key = "Use the key sk-proj-abcdefghijklmnopqrstuvwxyz123456 for lookups."
    await chat.say(f"/persona {key}", group=True, addressed=False)
    assert chat.texts(group(chat))[-1].startswith("I won't use that persona")
    assert "sk-proj" not in chat.texts(group(chat))[-1]
    assert await chat.parts.store.get_chat_persona(chat.name, group(chat)) == PIRATE
    await chat.say("hello", group=True)
    assert PIRATE in fake_llm.system_prompt() and "rude" not in fake_llm.system_prompt()


async def test_the_console_sets_and_clears_a_chats_persona(
    chat: Driver, fake_llm: FakeOpenAI
) -> None:
    csrf = await sign_in(chat.client)
    form = {"csrf": csrf, "channel": chat.name, "chat": group(chat), "text": PIRATE}
    done = await chat.client.post("/admin/personas", data=form)
    assert done.status == 200 and PIRATE in await done.text()
    await chat.say("hello", group=True)
    assert PIRATE in fake_llm.system_prompt()
    key = {**form, "text": "token: ghp_abcdefghijklmnopqrstuvwxyz0123456789"}
    refused = await chat.client.post("/admin/personas", data=key)
    assert refused.status == 400 and "ghp_" not in await refused.text()
    long = await chat.client.post("/admin/personas", data={**form, "text": "x" * 1001})
    assert long.status == 400
    assert await chat.parts.store.get_chat_persona(chat.name, group(chat)) == PIRATE
    await chat.client.post("/admin/personas", data={**form, "clear": "yes"})
    assert await chat.parts.store.get_chat_persona(chat.name, group(chat)) is None
