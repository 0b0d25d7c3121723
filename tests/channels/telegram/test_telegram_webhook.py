"""Telegram in: the webhook's checks, dedupe, who is answered, commands, topics, polling."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from gateway.channels.telegram.dialect import TEXT_ONLY
from gateway.config import Settings
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegramAPI, make_text_update, mention_entity
from tests.telegram_harness import SECRET, answer_markup, telegram_gateway

GROUP = -1001234567890


def group_update(update_id: int, text: str, **kw: Any) -> dict[str, Any]:
    """A text message in a supergroup."""
    return make_text_update(update_id, text, chat_id=GROUP, chat_type="supergroup", **kw)


async def test_a_private_message_is_answered_with_rating_buttons(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.reply("Paris is the **capital** of France.")
    async with telegram_gateway(make_settings, fake_llm) as gw:
        resp = await gw.post(make_text_update(1, "What is the capital of France?"))
        assert resp.status == 200
        await gw.idle()
        (sent,) = gw.fake.calls_of("sendMessage")
        assert sent.params["chat_id"] == 1001
        assert sent.params["text"] == "Paris is the <b>capital</b> of France."
        assert sent.params["parse_mode"] == "HTML"
        buttons = answer_markup(gw.fake)["inline_keyboard"][0]  # type: ignore[index]
        assert [b["text"] for b in buttons] == ["👍", "👎"]
        answer_id = int(buttons[0]["callback_data"].split(":")[1])
        assert [b["callback_data"] for b in buttons] == [
            f"rate:{answer_id}:+1",
            f"rate:{answer_id}:-1",
        ]
        stored = await gw.parts.store.get_message(answer_id)
        assert stored is not None and stored.platform_message_ids == ["1"]
        assert gw.fake.calls_of("sendChatAction")[0].params["action"] == "typing"
    assert fake_llm.requests[0]["messages"][-1]["content"] == "What is the capital of France?"


async def test_a_missing_or_wrong_secret_gets_401_and_nothing_is_stored_or_sent(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm) as gw:
        for secret in (None, "", "wrong", SECRET + "x", SECRET[:-1], "ünïcode"):
            resp = await gw.post(make_text_update(1, "hello"), secret=secret)
            assert resp.status == 401, secret
        assert await gw.parts.store.inbox_pending_count() == 0
        await asyncio.sleep(0.05)  # anything queued by mistake would be on its way now
        assert gw.fake.calls_of("sendMessage") == []
    assert fake_llm.requests == []


async def test_a_gateway_without_a_webhook_secret_refuses_every_webhook(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm, telegram_webhook_secret=None) as gw:
        for secret in (None, "", SECRET):
            assert (await gw.post(make_text_update(1, "hello"), secret=secret)).status == 401
        assert await gw.parts.store.inbox_pending_count() == 0


async def test_malformed_bodies_get_4xx_and_never_500(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    bad = {
        b"not json": 400,
        b"[1, 2]": 400,
        b'{"message": {}}': 400,
        b'{"update_id": "7"}': 400,
        b'{"update_id": true}': 400,
        b'{"update_id": 1.5}': 400,
        b"\xff\xfe{": 400,
        b"[" * 100_000: 400,
        b'{"update_id": 1, "pad": "' + b"x" * (1024 * 1024) + b'"}': 413,
    }
    async with telegram_gateway(make_settings, fake_llm) as gw:
        for body, status in bad.items():
            resp = await gw.post(body)
            assert resp.status == status, body[:40]
        # A well-formed update of a kind the bot does not handle is stored and ignored.
        resp = await gw.post({"update_id": 9, "poll": {"id": "1"}})
        assert resp.status == 200
        await gw.idle()
        assert await gw.parts.store.inbox_pending_count() == 0
        assert gw.fake.calls_of("sendMessage") == []


async def test_the_same_update_twice_is_answered_once(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm) as gw:
        update = make_text_update(5, "hello")
        first, second = await asyncio.gather(gw.post(update), gw.post(update))
        assert (first.status, second.status) == (200, 200)
        await gw.post(update)
        await gw.idle()
        assert gw.fake.sent_texts() == ["Hello from the fake model."]
    assert len(fake_llm.requests) == 1


async def test_in_a_group_only_messages_addressed_to_the_bot_are_answered(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.default = lambda body: f"re: {body['messages'][-1]['content']}"
    async with telegram_gateway(make_settings, fake_llm) as gw:
        bot = gw.fake.bot_username
        someone = group_update(1, "a message from someone")["message"]
        await gw.deliver(group_update(2, "just chatting among ourselves"))
        await gw.deliver(group_update(3, "replying to a person", reply_to_message=someone))
        await gw.deliver(group_update(4, "/help@some_other_bot"))
        assert gw.fake.calls_of("sendMessage") == [] and fake_llm.requests == []

        mention = f"@{bot.upper()} what is 2+2?"
        await gw.deliver(group_update(5, mention, entities=[mention_entity(mention, bot.upper())]))
        bot_message = gw.fake.message(GROUP, 1)
        await gw.deliver(group_update(6, "and 3+3?", reply_to_message=bot_message))
        await gw.deliver(group_update(7, f"/help@{bot}"))

        texts = gw.fake.sent_texts(GROUP)
        assert texts[:2] == ["re: what is 2+2?", "re: and 3+3?"]
        assert "mention me" in texts[2]
        replies = [c.params["reply_parameters"] for c in gw.fake.calls_of("sendMessage")]
        assert [r["message_id"] for r in replies] == [5, 6, 7]


async def test_start_help_and_new_commands(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm) as gw:
        await gw.deliver(make_text_update(1, "/start"))
        await gw.deliver(make_text_update(2, "/help"))
        await gw.deliver(make_text_update(3, "remember: my name is Alice"))
        await gw.deliver(make_text_update(4, "/new"))
        await gw.deliver(make_text_update(5, "what is my name?"))
        texts = gw.fake.sent_texts()
        assert texts[0].startswith("Hi Alice!") and "/help" in texts[0]
        assert "/new" in texts[1] and "👎" in texts[1]
        assert "fresh" in texts[3]
        assert answer_markup(gw.fake, 0) is None  # commands carry no rating buttons
    # The fresh session's prompt no longer holds the finished conversation.
    assert len(fake_llm.requests) == 2
    last_prompt = [m["content"] for m in fake_llm.requests[1]["messages"][1:]]
    assert last_prompt == ["what is my name?"]


async def test_unknown_commands_are_answered_only_when_meant_for_this_bot(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm) as gw:
        await gw.deliver(group_update(1, "/weather tomorrow"))  # perhaps another bot's
        assert gw.fake.calls_of("sendMessage") == []
        await gw.deliver(group_update(2, f"/weather@{gw.fake.bot_username}"))
        await gw.deliver(make_text_update(3, "/weather"))
        assert gw.fake.sent_texts(GROUP) == gw.fake.sent_texts(1001)
        assert gw.fake.sent_texts(1001) == ["I don't know /weather. /help lists what I understand."]
    assert fake_llm.requests == []


async def test_only_allowed_users_are_answered_and_others_are_told_politely(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(
        make_settings, fake_llm, telegram_allowed_user_ids="42", telegram_admin_ids="7"
    ) as gw:
        await gw.deliver(make_text_update(1, "let me in", chat_id=1001, user_id=1001))
        await gw.deliver(make_text_update(2, "hello", chat_id=42, user_id=42))
        await gw.deliver(make_text_update(3, "admin here", chat_id=7, user_id=7))
        (refusal,) = gw.fake.sent_texts(1001)
        assert "private" in refusal and "1001" in refusal
        assert gw.fake.sent_texts(42) == ["Hello from the fake model."]
        assert gw.fake.sent_texts(7) == ["Hello from the fake model."]
    assert len(fake_llm.requests) == 2


async def test_a_forum_topic_is_answered_in_its_own_thread(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm) as gw:
        text = f"@{gw.fake.bot_username} hi"
        update = make_text_update(
            1,
            text,
            chat_id=GROUP,
            chat_type="supergroup",
            entities=[mention_entity(text, gw.fake.bot_username)],
            message_thread_id=77,
            is_topic_message=True,
        )
        await gw.deliver(update)
        (sent,) = gw.fake.calls_of("sendMessage")
        assert sent.params["message_thread_id"] == 77
        assert gw.fake.calls_of("sendChatAction")[0].params["message_thread_id"] == 77


async def test_a_video_in_a_private_chat_gets_a_short_notice(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    update = make_text_update(1, "x")
    del update["message"]["text"]
    update["message"]["video"] = {
        "file_id": "v1",
        "file_unique_id": "u1",
        "width": 90,
        "height": 90,
        "duration": 4,
    }
    async with telegram_gateway(make_settings, fake_llm) as gw:
        await gw.deliver(update)
        assert gw.fake.sent_texts() == [TEXT_ONLY]
    assert fake_llm.requests == []


async def test_healthz_names_the_bot_and_the_mode(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm) as gw:
        body = await (await gw.client.get("/healthz")).json()
        assert body["channels"]["telegram"] == {
            "configured": True,
            "mode": "webhook",
            "bot": gw.fake.bot_username,
        }


async def test_start_up_registers_nothing_with_telegram(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    # `skillgate set-webhook` registers the webhook once; a restart must not repeat it.
    async with telegram_gateway(
        make_settings, fake_llm, public_url="https://bot.example.org"
    ) as gw:
        assert gw.fake.webhook_url == ""
        for method in ("setWebhook", "setMyCommands", "deleteWebhook"):
            assert gw.fake.calls_of(method) == []


async def test_polling_answers_through_the_same_path_and_confirms_what_it_stored(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    def old_webhook(fake: FakeTelegramAPI) -> None:
        fake.webhook_url = "https://old.example.org/webhook/telegram"

    async with telegram_gateway(
        make_settings, fake_llm, telegram_polling=True, before_start=old_webhook
    ) as gw:
        # getUpdates is refused while a webhook is set, so polling removes it first.
        assert len(gw.fake.calls_of("deleteWebhook")) == 1
        assert gw.fake.webhook_url == ""
        gw.fake.push_update(make_text_update(10, "first"))
        gw.fake.push_update(make_text_update(11, "second"))
        await gw.fake.wait_for("sendMessage", 2)
        body = await (await gw.client.get("/healthz")).json()
        assert body["channels"]["telegram"]["mode"] == "polling"
        # A later poll confirms both; nothing is fetched (or answered) twice.
        gw.fake.push_update(make_text_update(12, "third"))
        await gw.fake.wait_for("sendMessage", 3)
        await gw.idle()
        polls = [c.params.get("offset") for c in gw.fake.calls_of("getUpdates")]
        assert 12 in polls
    assert [r["messages"][-1]["content"] for r in fake_llm.requests] == ["first", "second", "third"]
    assert len(gw.fake.sent_texts()) == 3


async def test_an_update_that_cannot_be_stored_is_not_acknowledged(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm) as gw:
        store = gw.parts.store
        await store.close()
        resp = await gw.post(make_text_update(1, "hello"))
        assert resp.status == 503  # not 200: Telegram delivers it again later
        await store.open()
        assert (await gw.post(make_text_update(1, "hello"))).status == 200
        await gw.idle()
        assert gw.fake.sent_texts() == ["Hello from the fake model."]
