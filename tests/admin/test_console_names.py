"""The console names people as their platform last sent them, beside the ids; /forget forgets it."""

from __future__ import annotations

from collections.abc import Callable

from gateway.config import Settings
from gateway.core.models import TERMINAL, ChatRef, IncomingMessage
from tests.console_support import sign_in
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import make_text_update
from tests.store_support import current_session
from tests.telegram_harness import telegram_gateway


async def test_display_names_show_beside_ids_follow_renames_and_go_with_forget(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm) as gw:
        fake_llm.reply("Hello!")
        await gw.deliver(make_text_update(1, "hi", user_id=1001, first_name="Alice"))
        fake_llm.reply("Hello again!")
        await gw.deliver(make_text_update(2, "/new", user_id=1001, first_name="Alice"))
        await gw.deliver(make_text_update(3, "hi again", user_id=1001, first_name="Alicia"))
        csrf = await sign_in(gw.client)
        listing = await (await gw.client.get("/admin/conversations")).text()
        assert '<span class="user-name">Alicia</span> <span class="mono">1001</span>' in listing
        assert ">Alice<" not in listing  # the name as the platform last sent it
        page = await (await gw.client.get("/admin/conversations/1")).text()
        assert '<span class="user-name">Alicia</span> <span class="mono">1001</span>' in page
        users = await (await gw.client.get("/admin/users")).text()
        assert 'label="Alicia · telegram"' in users

        form = {"csrf": csrf, "channel": "telegram", "user": "1001", "confirm": "yes"}
        resp = await gw.client.post("/admin/users/forget", data=form)
        assert resp.status == 200, await resp.text()
        # A session of theirs without a name: the one they had was forgotten with them.
        store = gw.parts.store
        await current_session(store, "telegram", "1001", "1001", 5.0, 60)
        assert await store.known_users() == [("telegram", "1001", "")]


async def test_a_terminal_user_from_skillgate_chat_can_be_exported_and_forgotten(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm) as gw:
        fake_llm.reply("Hello, root.")
        chat = ChatRef(channel=TERMINAL, chat_id="root", user_id="root")
        await gw.parts.agent.respond(IncomingMessage(chat=chat, text="hi from the terminal"))
        csrf = await sign_in(gw.client)
        users = await (await gw.client.get("/admin/users")).text()
        assert 'label="console"' in users and "<option>console</option>" in users
        assert 'type="text" id="memory-user"' in users
        exported = await gw.client.get("/admin/users/export?channel=console&user=root")
        assert exported.status == 200 and "hi from the terminal" in await exported.text()
        form = {"csrf": csrf, "channel": TERMINAL, "user": "root", "confirm": "yes"}
        resp = await gw.client.post("/admin/users/forget", data=form)
        assert resp.status == 200, await resp.text()
        assert (TERMINAL, "root", "") not in await gw.parts.store.known_users()
        personas = await (await gw.client.get("/admin/personas")).text()
        assert 'type="text" id="persona-chat"' in personas
