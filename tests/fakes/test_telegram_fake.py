"""Checks that the real python-telegram-bot client works against FakeTelegramAPI."""

import asyncio
import os
import time
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from telegram import Bot, ForceReply, InlineKeyboardButton, InlineKeyboardMarkup, Update
from telegram.error import BadRequest, EndPointNotFound, RetryAfter
from telegram.ext import Application, CommandHandler, ContextTypes

from tests.fakes.telegram_api import (
    FakeTelegramAPI,
    make_callback_update,
    make_text_update,
    mention_entity,
)

# httpx honours proxy variables, which would route 127.0.0.1 through a proxy.
os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")

# PTB strips "Bad Request: " from error descriptions and str.capitalize()s the rest, so
# error text is matched case-insensitively.
KEYBOARD = InlineKeyboardMarkup([[InlineKeyboardButton("Yes", callback_data="vote:yes")]])


@pytest_asyncio.fixture
async def fake() -> AsyncIterator[FakeTelegramAPI]:
    async with FakeTelegramAPI() as api:
        yield api


@pytest_asyncio.fixture
async def bot(fake: FakeTelegramAPI) -> AsyncIterator[Bot]:
    async with Bot(fake.token, base_url=fake.base_url) as client:
        yield client


@pytest.mark.asyncio
async def test_initialize_calls_get_me(fake: FakeTelegramAPI, bot: Bot) -> None:
    assert bot.username == "skillgate_test_bot"
    assert bot.id == 123456
    assert [c.method for c in fake.calls] == ["getMe"]


@pytest.mark.asyncio
async def test_send_message_records_decoded_params(fake: FakeTelegramAPI, bot: Bot) -> None:
    first = await bot.send_message(42, "hello", reply_markup=KEYBOARD)
    second = await bot.send_message(42, "42", disable_notification=True)

    assert (first.message_id, second.message_id) == (1, 2)
    assert first.reply_markup == KEYBOARD
    call = fake.calls_of("sendMessage")[0]
    assert call.params["chat_id"] == 42
    assert call.params["reply_markup"] == {
        "inline_keyboard": [[{"text": "Yes", "callback_data": "vote:yes"}]]
    }
    assert fake.calls_of("sendMessage")[1].params["disable_notification"] is True
    assert fake.sent_texts(42) == ["hello", "42"]
    assert fake.sent_texts(7) == []
    assert fake.message(42, 1)["reply_markup"]["inline_keyboard"][0][0]["text"] == "Yes"


@pytest.mark.asyncio
async def test_send_message_validation(fake: FakeTelegramAPI, bot: Bot) -> None:
    with pytest.raises(BadRequest, match=r"(?i)message is too long"):
        await bot.send_message(1, "x" * 4097)
    with pytest.raises(BadRequest, match=r"(?i)message text is empty"):
        await bot.send_message(1, "  ")
    too_long = InlineKeyboardMarkup([[InlineKeyboardButton("x", callback_data="d" * 65)]])
    with pytest.raises(BadRequest, match=r"(?i)button_data_invalid"):
        await bot.send_message(1, "hi", reply_markup=too_long)
    assert [c.status for c in fake.calls_of("sendMessage")] == [400, 400, 400]
    assert fake.sent_texts() == []


@pytest.mark.asyncio
async def test_rate_limit_surfaces_as_retry_after(fake: FakeTelegramAPI, bot: Bot) -> None:
    fake.fail_next("sendMessage", 429, "Too Many Requests: retry after 3", retry_after=3)

    # The wording depends on PTB_TIMEDELTA: "3 seconds" for ints, "0:00:03" for timedeltas.
    with pytest.raises(RetryAfter, match=r"Retry in (3 seconds|0:00:03)"):
        await bot.send_message(1, "first try")
    message = await bot.send_message(1, "second try")

    assert message.message_id == 1
    assert fake.sent_texts() == ["second try"]


@pytest.mark.asyncio
async def test_html_errors_surface_as_bad_request(fake: FakeTelegramAPI, bot: Bot) -> None:
    with pytest.raises(BadRequest, match=r"(?i)can't parse entities: can't find end tag"):
        await bot.send_message(1, "<b>bold", parse_mode="HTML")
    with pytest.raises(BadRequest, match=r'(?i)unsupported start tag "" at byte offset 2'):
        await bot.send_message(1, "1 < 2", parse_mode="HTML")
    with pytest.raises(BadRequest, match=r"(?i)unmatched end tag"):
        await bot.send_message(1, "<b><i>x</b></i>", parse_mode="HTML")

    ok = '<b>bold</b> <a href="https://example.org">link</a> &lt;tag&gt; <tg-spoiler>s</tg-spoiler>'
    message = await bot.send_message(1, ok, parse_mode="HTML")
    assert message.text == ok


@pytest.mark.asyncio
async def test_edits_keep_state_and_reject_no_op(fake: FakeTelegramAPI, bot: Bot) -> None:
    sent = await bot.send_message(5, "pick one", reply_markup=KEYBOARD)

    with pytest.raises(BadRequest, match=r"(?i)message is not modified"):
        await bot.edit_message_text("pick one", 5, sent.message_id, reply_markup=KEYBOARD)
    with pytest.raises(BadRequest, match=r"(?i)message to edit not found"):
        await bot.edit_message_text("x", 5, 99)

    edited = await bot.edit_message_text("picked", 5, sent.message_id)
    assert edited.text == "picked"
    # An edit that does not repeat the keyboard removes it, as on Telegram.
    assert "reply_markup" not in fake.message(5, sent.message_id)
    with pytest.raises(BadRequest, match=r"(?i)message is not modified"):
        await bot.edit_message_reply_markup(5, sent.message_id)

    await bot.edit_message_reply_markup(5, sent.message_id, reply_markup=KEYBOARD)
    assert fake.message(5, sent.message_id)["reply_markup"] == KEYBOARD.to_dict()
    assert await bot.delete_message(5, sent.message_id)
    with pytest.raises(KeyError):
        fake.message(5, sent.message_id)


@pytest.mark.asyncio
async def test_send_document_records_file(fake: FakeTelegramAPI, bot: Bot) -> None:
    message = await bot.send_document(
        7, b"line one\nline two", filename="notes.txt", caption="your notes"
    )

    (call,) = fake.calls_of("sendDocument")
    assert call.params["document"] == "line one\nline two"
    assert call.params["chat_id"] == 7
    assert call.files["document"].filename == "notes.txt"
    assert message.document.file_name == "notes.txt"
    assert message.caption == "your notes"


@pytest.mark.asyncio
async def test_webhook_and_commands_state(fake: FakeTelegramAPI, bot: Bot) -> None:
    await bot.set_webhook("https://example.org/hook", secret_token="s3cret", max_connections=5)
    fake.pending_update_count = 3
    info = await bot.get_webhook_info()
    assert (info.url, info.pending_update_count, info.max_connections) == (
        "https://example.org/hook",
        3,
        5,
    )
    assert fake.webhook_secret_token == "s3cret"
    with pytest.raises(BadRequest, match=r"(?i)https url must be provided"):
        await bot.set_webhook("http://example.org/hook")
    await bot.delete_webhook()
    assert (await bot.get_webhook_info()).url == ""

    await bot.set_my_commands([("start", "Start the bot"), ("help", "Show help")])
    assert [c.command for c in await bot.get_my_commands()] == ["start", "help"]
    await bot.delete_my_commands()
    assert await bot.get_my_commands() == ()


@pytest.mark.asyncio
async def test_get_updates_returns_pushed_updates(fake: FakeTelegramAPI, bot: Bot) -> None:
    fake.push_update(make_text_update(1, "/start hello"))
    fake.push_update(make_callback_update(2, "vote:yes", reply_markup=KEYBOARD.to_dict()))

    updates = await bot.get_updates(timeout=5)
    assert [u.update_id for u in updates] == [1, 2]
    assert updates[0].message.text == "/start hello"
    assert updates[0].message.entities[0].type == "bot_command"
    assert updates[0].message.entities[0].length == len("/start")
    assert updates[1].callback_query.data == "vote:yes"
    assert updates[1].callback_query.message.reply_markup == KEYBOARD

    started = time.monotonic()
    assert await bot.get_updates(offset=3, timeout=30) == ()
    assert time.monotonic() - started < 3


@pytest.mark.asyncio
async def test_long_poll_wakes_on_push(fake: FakeTelegramAPI, bot: Bot) -> None:
    fake.long_poll_cap = 10.0
    poll = asyncio.create_task(bot.get_updates(timeout=10))
    await asyncio.sleep(0.1)
    fake.push_update(make_text_update(5, "hi"))
    updates = await asyncio.wait_for(poll, 2)
    assert [u.update_id for u in updates] == [5]


def test_mention_entity_counts_utf16_units() -> None:
    text = "😀 hi @skillgate_test_bot"
    entity = mention_entity(text, "skillgate_test_bot")
    assert entity == {"type": "mention", "offset": 6, "length": 19}
    update = Update.de_json(
        make_text_update(1, text, entities=[entity], chat_type="group", chat_id=-5), None
    )
    assert update.message.parse_entity(update.message.entities[0]) == "@skillgate_test_bot"


@pytest.mark.asyncio
async def test_unknown_method_is_404(fake: FakeTelegramAPI, bot: Bot) -> None:
    with pytest.raises(EndPointNotFound):
        await bot.do_api_request("frobnicate", api_kwargs={"x": 1})
    assert [c.method for c in fake.unknown_calls] == ["frobnicate"]
    assert fake.unknown_calls[0].params == {"x": 1}


@pytest.mark.asyncio
async def test_wait_for_times_out_with_report(fake: FakeTelegramAPI, bot: Bot) -> None:
    with pytest.raises(AssertionError, match=r"waiting for 1 sendMessage.*getMe->200"):
        await fake.wait_for("sendMessage", timeout=0.1)


@pytest.mark.asyncio
async def test_application_polling_round_trip(fake: FakeTelegramAPI) -> None:
    async def start(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        await update.effective_message.reply_text(f"welcome {update.effective_user.first_name}")

    app = Application.builder().token(fake.token).base_url(fake.base_url).build()
    app.add_handler(CommandHandler("start", start))
    fake.set_delay("sendMessage", 0.05)
    async with app:
        await app.start()
        await app.updater.start_polling(poll_interval=0)
        fake.push_update(make_text_update(1, "/start", chat_id=77))
        (call,) = await fake.wait_for("sendMessage")
        await app.updater.stop()
        await app.stop()

    assert call.params["chat_id"] == 77
    assert fake.sent_texts(77) == ["welcome Alice"]
    assert "deleteWebhook" in [c.method for c in fake.calls]


@pytest.mark.asyncio
async def test_failures_can_wait_for_earlier_calls(fake: FakeTelegramAPI, bot: Bot) -> None:
    fake.fail_next("sendMessage", 429, "Too Many Requests: retry after 1", retry_after=1, after=1)
    await bot.send_message(1, "first")
    with pytest.raises(RetryAfter):
        await bot.send_message(1, "second")
    await bot.send_message(1, "third")
    assert fake.sent_texts() == ["first", "third"]


@pytest.mark.asyncio
async def test_a_message_keeps_only_an_inline_keyboard(fake: FakeTelegramAPI, bot: Bot) -> None:
    prompt = await bot.send_message(1, "why?", reply_markup=ForceReply(selective=True))
    assert prompt.reply_markup is None
    assert "reply_markup" not in fake.message(1, prompt.message_id)
    assert fake.calls_of("sendMessage")[0].params["reply_markup"]["force_reply"] is True


@pytest.mark.asyncio
async def test_a_draft_is_shown_in_a_private_chat_and_refused_in_a_group(
    fake: FakeTelegramAPI, bot: Bot
) -> None:
    assert await bot.send_message_draft(42, 7, "Hel") is True
    assert await bot.send_message_draft(42, 7, "Hello") is True
    assert fake.drafts == {(42, 7): "Hello"}
    assert fake.draft_texts(42) == ["Hel", "Hello"]
    assert fake.messages == {}  # a draft is no message
    for group in (-100123, -1001234567890):
        with pytest.raises(BadRequest, match=r"(?i)textdraft_peer_invalid"):
            await bot.send_message_draft(group, 7, "Hello")
    with pytest.raises(BadRequest, match=r"(?i)draft_id"):
        await bot.send_message_draft(42, 0, "Hello")
