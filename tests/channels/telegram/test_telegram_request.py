"""PTB's Bot API calls over the gateway's aiohttp request class, against the fake Bot API."""

from __future__ import annotations

import socket

import pytest
from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup, InputFile
from telegram.error import NetworkError, TimedOut

from gateway.channels.telegram.send import bot_request
from tests.fakes.telegram_api import FakeTelegramAPI


async def test_texts_buttons_and_files_arrive_as_the_bot_api_reads_them() -> None:
    async with (
        FakeTelegramAPI() as fake,
        Bot(fake.token, base_url=fake.base_url, request=bot_request()) as bot,
    ):
        markup = InlineKeyboardMarkup([[InlineKeyboardButton("👍", callback_data="rate:1:+1")]])
        sent = await bot.send_message(
            1001, "héllo <b>there</b>", parse_mode="HTML", reply_markup=markup
        )
        assert sent.chat.id == 1001 and sent.message_id > 0
        await bot.send_document(
            1001, InputFile(b"line one\n", filename="notes.txt"), caption="your notes"
        )
    (message,) = fake.calls_of("sendMessage")
    assert message.params["text"] == "héllo <b>there</b>"
    assert message.params["reply_markup"]["inline_keyboard"][0][0]["callback_data"] == "rate:1:+1"
    (document,) = fake.calls_of("sendDocument")
    upload = document.files["document"]
    assert (upload.filename, upload.content) == ("notes.txt", b"line one\n")
    assert document.params["caption"] == "your notes"


async def test_a_bot_api_that_cannot_be_reached_is_a_network_error_without_the_token() -> None:
    token = "123456:SECRET-TOKEN-VALUE"
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        base = f"http://127.0.0.1:{sock.getsockname()[1]}/bot"
    bot = Bot(token, base_url=base, request=bot_request(timeout=2.0))
    await bot.request.initialize()
    try:
        with pytest.raises(NetworkError) as error:
            await bot.send_message(1, "hi")
        assert "SECRET-TOKEN-VALUE" not in str(error.value)
    finally:
        await bot.request.shutdown()


async def test_an_answer_slower_than_the_read_timeout_is_timed_out() -> None:
    async with FakeTelegramAPI() as fake:
        fake.set_delay("sendMessage", 5.0)
        async with Bot(fake.token, base_url=fake.base_url, request=bot_request(timeout=0.3)) as bot:
            with pytest.raises(TimedOut):
                await bot.send_message(1001, "slow")
