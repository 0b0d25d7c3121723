"""`skillgate serve` as a real process, answering Telegram through the fake Bot API."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import aiohttp

from gateway.config import Settings
from gateway.ops.doctor import check_channels
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegramAPI, make_text_update
from tests.serve_process import serving
from tests.telegram_harness import SECRET


def environment(tmp_path: Path, fake: FakeTelegramAPI, llm: FakeOpenAI) -> dict[str, str]:
    return {
        "SKILLGATE_DATA_DIR": str(tmp_path / "data"),
        "TELEGRAM_BOT_TOKEN": fake.token,
        "TELEGRAM_WEBHOOK_SECRET": SECRET,
        "TELEGRAM_API_BASE_URL": fake.base_url,
        "LLM_BASE_URL": llm.base_url,
        "LLM_MODEL": "fake-model",
        "SKILLGATE_LOG_LEVEL": "DEBUG",
    }


async def test_serve_answers_telegram_by_webhook_and_by_polling(
    tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.reply("Hello through the real server.")
    async with FakeTelegramAPI() as fake:
        env = environment(tmp_path, fake, fake_llm)
        async with (
            serving("--polling", env=env) as served,
            aiohttp.ClientSession() as http,
        ):
            assert served.health["channels"]["telegram"] == {
                "configured": True,
                "mode": "polling",
                "bot": fake.bot_username,
            }
            hook = f"{served.url}/webhook/telegram"
            async with http.post(hook, json=make_text_update(1, "hi")) as resp:
                assert resp.status == 401
            headers = {"X-Telegram-Bot-Api-Secret-Token": SECRET}
            async with http.post(hook, json=make_text_update(2, "hi"), headers=headers) as resp:
                assert resp.status == 200
            (sent,) = await fake.wait_for("sendMessage", timeout=10)
            assert sent.params["text"] == "Hello through the real server."
            assert sent.params["reply_markup"]["inline_keyboard"][0][0]["text"] == "👍"

            fake.push_update(make_text_update(3, "are you polling?"))
            sent = (await fake.wait_for("sendMessage", 2, timeout=10))[1]
            assert sent.params["text"] == "Hello from the fake model."
    assert served.returncode == 0, served.stderr
    assert fake.token not in served.stderr


def test_doctor_needs_the_webhook_secret_only_without_polling(
    make_settings: Callable[..., Settings],
) -> None:
    webhook = check_channels(make_settings(telegram_bot_token="1:A"))
    assert [(c.name, c.status) for c in webhook if c.name == "telegram"] == [("telegram", "fail")]
    polling = check_channels(make_settings(telegram_bot_token="1:A", telegram_polling=True))
    assert [(c.name, c.status) for c in polling if c.name == "telegram"] == [("telegram", "ok")]
