"""Logs: readable or JSON lines, and never a token, secret or key in either."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from aiohttp import web

from gateway.app import PARTS, build_app
from gateway.channels.registry import sdk_loggers
from gateway.cli.main import start_logging
from gateway.config import Settings
from gateway.core.models import ChatRef, Reply
from gateway.logs import NOISY, REDACTED, mask
from gateway.runtime.assembly import Parts
from tests.fakes.channel import FakeChannel
from tests.fakes.line_api import FakeLineAPI
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegramAPI
from tests.serve_process import serving

BOT_TOKEN = "7300012345:AAHx9Zk2-secret_bot_token_value_0123456"
LINE_SECRET = "line-channel-secret-4c1f"
LINE_TOKEN = "line-access-token-8d2e"
LLM_KEY = "sk-live-key-5a7b9c"


@pytest.fixture
def captured() -> Iterator[Callable[[Settings, str], io.StringIO]]:
    """Install the gateway's own logging into a buffer; restore pytest's afterwards."""
    root = logging.getLogger()
    chatty = (*NOISY, *sdk_loggers())
    saved = (root.handlers[:], root.level, {n: logging.getLogger(n).level for n in chatty})

    def install(settings: Settings, log_format: str) -> io.StringIO:
        stream = io.StringIO()
        start_logging(settings, "DEBUG", log_format, stream)
        for name in (
            *NOISY,
            *sdk_loggers(),
        ):  # let the request loggers talk: masking, not silence, is tested
            logging.getLogger(name).setLevel(logging.DEBUG)
        return stream

    yield install
    root.handlers[:], root.level = saved[0], saved[1]
    for name, level in saved[2].items():
        logging.getLogger(name).setLevel(level)


class TelegramDelivery(FakeChannel):
    """A channel that delivers answers with python-telegram-bot, whose URLs carry the token."""

    name = "fake"

    def __init__(self, settings: Settings, api: FakeTelegramAPI) -> None:
        super().__init__(settings)
        self.api = api

    async def send(self, chat: ChatRef, reply: Reply) -> list[str]:
        from telegram import Bot

        async with Bot(BOT_TOKEN, base_url=self.api.base_url) as bot:
            message = await bot.send_message(1001, reply.text)
        await super().send(chat, reply)
        return [str(message.message_id)]


@pytest.mark.parametrize("log_format", ["text", "json"])
async def test_no_log_line_carries_a_secret_during_a_conversation(
    make_settings: Callable[..., Settings],
    fake_llm: FakeOpenAI,
    captured: Callable[[Settings, str], io.StringIO],
    log_format: str,
) -> None:
    async with FakeTelegramAPI(token=BOT_TOKEN) as telegram, FakeLineAPI(LINE_TOKEN) as line:
        settings = make_settings(
            telegram_bot_token=BOT_TOKEN,
            telegram_webhook_secret="hook-secret-3e9",
            line_channel_secret=LINE_SECRET,
            line_channel_access_token=LINE_TOKEN,
            line_api_base_url=line.base_url,
            llm_base_url=fake_llm.base_url,
            llm_model="fake-model",
            llm_api_key=LLM_KEY,
        )
        stream = captured(settings, log_format)
        channel = TelegramDelivery(settings, telegram)
        runner = web.AppRunner(build_app(settings, channels=[channel]))
        await runner.setup()
        try:
            parts: Parts = runner.app[PARTS]
            fake_llm.error(500, times=3)  # the first turn fails: its error is logged
            await channel.accept("1", "c1", "hello")
            await channel.accept("2", "c1", f"my key is {LLM_KEY}, keep it safe")
            await channel.wait_sent(2)
            await parts.worker.wait_idle(5)
            await _line_call(settings)
            try:
                raise ConnectionError(f"POST {telegram.base_url}{BOT_TOKEN}/sendMessage failed")
            except ConnectionError:
                logging.getLogger("gateway.test").exception("delivery failed")
        finally:
            await runner.cleanup()

    output = stream.getvalue()
    assert "sendMessage" in output and "delivery failed" in output
    assert REDACTED in output  # the token was there, masked
    for secret in (BOT_TOKEN, LINE_SECRET, LINE_TOKEN, LLM_KEY):
        assert secret not in output
    if log_format == "json":
        lines = [json.loads(line) for line in output.splitlines()]
        assert {"time", "level", "logger", "message"} <= set(lines[0])
        assert any("exc" in line and "ConnectionError" in line["exc"] for line in lines)


async def _line_call(settings: Settings) -> None:
    """One LINE SDK call, which sends the access token."""
    from gateway.channels.line.operator import line_api

    async with line_api(settings) as api:
        await api.get_bot_info()


def test_text_lines_stay_readable(captured: Callable[[Settings, str], io.StringIO]) -> None:
    settings = Settings(_env_file=None, telegram_bot_token=BOT_TOKEN)  # type: ignore[call-arg]
    stream = captured(settings, "text")
    logging.getLogger("gateway.x").warning("calling %s/bot%s/getMe", "https://h", BOT_TOKEN)
    line = stream.getvalue().strip()
    assert line.endswith("WARNING gateway.x: calling https://h/bot[redacted]/getMe")


def test_a_bot_token_shape_is_masked_even_when_not_configured(
    captured: Callable[[Settings, str], io.StringIO],
) -> None:
    stream = captured(Settings(_env_file=None), "json")  # type: ignore[call-arg]
    other = "5550001111:AAFq0ther-token-not-in-settings_abcdefgh"
    logging.getLogger("httpx").info("HTTP Request: GET https://api.telegram.org/bot%s/getMe", other)
    entry = json.loads(stream.getvalue())
    assert entry["logger"] == "httpx" and entry["level"] == "INFO"
    assert entry["message"] == "HTTP Request: GET https://api.telegram.org/bot[redacted]/getMe"


def test_mask_hides_configured_secrets_credentials_and_shapes() -> None:
    text = "key=abcd sk-0123456789abc Bearer tok.en.value1 token=hunter22 id 42:AAbb x"
    masked = mask(text, ["abcd", "x"], [r"\d+:AA\w+"])
    assert masked == (
        f"key={REDACTED} {REDACTED} {REDACTED} token={REDACTED} id {REDACTED} x"
    )  # "x" is too short to be a secret: masking it would mask every x


def test_mask_masks_the_longer_of_two_overlapping_secrets_whole() -> None:
    assert mask("pass: secret-long", ["secret", "secret-long"]) == f"pass: {REDACTED}"


async def test_serve_logs_json_lines_and_stops_gracefully(tmp_path: Path) -> None:
    env = {"SKILLGATE_DATA_DIR": str(tmp_path / "data")}
    async with serving("--log-format", "json", env=env) as served:
        assert served.health["status"] == "ok"
    assert served.returncode == 0
    entries = [json.loads(line) for line in served.stderr.splitlines()]
    messages = [e["message"] for e in entries]
    assert any(m.startswith("skillgate ") and "ready" in m for m in messages)
    assert any(m.startswith("stopping: answers in flight get 20 s") for m in messages)
