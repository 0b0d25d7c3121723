"""Telegram: what the gateway reads of a message itself, and the answer it sends back."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gateway.config import Settings
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import make_text_update, mention_entity
from tests.telegram_harness import answer_markup, telegram_gateway

GROUP = -1009876543210


def group_update(update_id: int, text: str, **kw: Any) -> dict[str, Any]:
    return make_text_update(update_id, text, chat_id=GROUP, chat_type="supergroup", **kw)


async def test_mentions_after_emoji_are_read_at_their_utf16_offsets(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.default = lambda body: f"re: {body['messages'][-1]['content']}"
    async with telegram_gateway(make_settings, fake_llm) as gw:
        bot = gw.fake.bot_username
        # 👋🏽 is two characters but four UTF-16 code units, which Telegram's offsets count.
        ours = f"👋🏽 @{bot} what now?"
        theirs = "👋🏽 @someone_else what now?"
        named = "👋🏽 Bot, and you?"
        text_mention = {"type": "text_mention", "offset": 5, "length": 3}
        text_mention["user"] = {"id": gw.fake.bot_id, "is_bot": True, "first_name": "Bot"}
        await gw.deliver(group_update(1, theirs, entities=[mention_entity(theirs, "someone_else")]))
        assert fake_llm.requests == []
        await gw.deliver(group_update(2, ours, entities=[mention_entity(ours, bot)]))
        await gw.deliver(group_update(3, named, entities=[text_mention]))
        assert gw.fake.sent_texts(GROUP) == ["re: 👋🏽  what now?", "re: 👋🏽 Bot, and you?"]


async def test_a_group_answer_replies_to_its_question_with_rating_buttons(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm) as gw:
        text = f"@{gw.fake.bot_username} hi"
        mention = [mention_entity(text, gw.fake.bot_username)]
        await gw.deliver(group_update(9, text, entities=mention, message_thread_id=4))
        topic = group_update(10, text, entities=mention, message_thread_id=4, is_topic_message=True)
        await gw.deliver(topic)
        first, second = gw.fake.calls_of("sendMessage")
        # A reply still arrives when the question was deleted meanwhile.
        assert first.params["reply_parameters"] == {
            "message_id": 9,
            "allow_sending_without_reply": True,
        }
        assert "message_thread_id" not in first.params  # a reply thread, not a forum topic
        assert second.params["message_thread_id"] == 4
        buttons = answer_markup(gw.fake, 0)["inline_keyboard"]  # type: ignore[index]
        assert [[b["text"] for b in row] for row in buttons] == [["👍", "👎"]]


async def test_a_stored_update_is_acknowledged_with_ok_json(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm) as gw:
        resp = await gw.post(make_text_update(1, "hello"))
        assert resp.status == 200 and resp.content_type == "application/json"
        assert await resp.json() == {"ok": True}
        await gw.idle()
        assert gw.fake.sent_texts(1001) == ["Hello from the fake model."]
