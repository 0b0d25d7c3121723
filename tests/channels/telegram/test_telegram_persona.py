"""Telegram: who may set a group's persona is what getChatMember says, group by group."""

from __future__ import annotations

from collections.abc import Callable

from gateway.config import Settings
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import make_text_update
from tests.telegram_harness import telegram_gateway

FIRST, SECOND = -1001, -1002
OWNER, MEMBER = 7001, 7002


def in_group(update_id: int, chat: int, user: int, text: str) -> dict[str, object]:
    mention = "@skillgate_test_bot"
    if text.startswith("/"):
        return make_text_update(update_id, text, chat_id=chat, user_id=user, chat_type="group")
    return make_text_update(
        update_id,
        f"{mention} {text}",
        chat_id=chat,
        user_id=user,
        chat_type="group",
        entities=[{"type": "mention", "offset": 0, "length": len(mention)}],
    )


async def test_a_groups_administrator_sets_its_persona_and_no_other_group_gets_it(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm) as gw:
        gw.fake.chat_admins[FIRST] = {OWNER}
        await gw.deliver(in_group(1, SECOND, OWNER, "/persona Be a pirate."))
        assert gw.fake.sent_texts(SECOND)[-1] == "Only this chat's admins can change its persona."
        await gw.deliver(in_group(2, FIRST, OWNER, "/persona Be a pirate."))
        asked = gw.fake.calls_of("getChatMember")[-1].params
        assert (int(asked["chat_id"]), int(asked["user_id"])) == (FIRST, OWNER)
        await gw.deliver(in_group(3, FIRST, MEMBER, "hello"))
        assert "Be a pirate." in fake_llm.system_prompt()
        await gw.deliver(in_group(4, SECOND, MEMBER, "hello"))
        assert "pirate" not in fake_llm.system_prompt()
