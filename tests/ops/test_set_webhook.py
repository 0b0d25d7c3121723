"""`skillgate set-webhook` against the Telegram and LINE fakes, with the real SDKs."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from gateway.config import Settings
from gateway.ops.webhooks import run_set_webhook
from tests.fakes.line_api import WEBHOOK_ENDPOINT_PATH, WEBHOOK_TEST_PATH, FakeLineAPI
from tests.fakes.telegram_api import FakeTelegramAPI
from tests.ops.conftest import PUBLIC_URL, WEBHOOK_SECRET

TELEGRAM_URL = f"{PUBLIC_URL}/webhook/telegram"
LINE_URL = f"{PUBLIC_URL}/webhook/line"


def line_puts(fake: FakeLineAPI) -> list[object]:
    return [c.body for c in fake.calls_to(WEBHOOK_ENDPOINT_PATH) if c.method == "PUT"]


async def test_set_webhook_sends_exactly_the_expected_parameters(
    bot_settings: Settings,
    telegram_api: FakeTelegramAPI,
    line_api: FakeLineAPI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert await run_set_webhook(bot_settings) == 0

    [hook] = telegram_api.calls_of("setWebhook")
    assert hook.params == {
        "url": TELEGRAM_URL,
        "secret_token": WEBHOOK_SECRET,
        "allowed_updates": ["message", "callback_query"],
        "max_connections": 40,
        "drop_pending_updates": False,
    }
    menus = {
        c.params.get("language_code", ""): c.params for c in telegram_api.calls_of("setMyCommands")
    }
    assert sorted(menus) == ["", "ja", "th", "zh"]  # everyone's, and one per catalog
    for params in menus.values():
        names = [c["command"] for c in params["commands"]]
        assert names == [
            "start",
            "help",
            "new",
            "language",
            "remember",
            "memory",
            "persona",
            "voice",
            "remind",
            "tasks",
            "timezone",
            "forget",
        ]
        assert all(c["description"] for c in params["commands"])
    english = [c["description"] for c in menus[""]["commands"]]
    assert english[0] == "Say hello and see what I can do"
    assert menus["ja"]["commands"][0]["description"] == "あいさつと、できることの紹介"
    assert menus["zh"]["commands"][2]["description"] == "開始新的對話"
    assert menus["ja"]["commands"][9]["description"].startswith("リマインダーの一覧")
    assert line_puts(line_api) == [{"endpoint": LINE_URL}]
    [test] = line_api.calls_to(WEBHOOK_TEST_PATH)
    assert test.body == {"endpoint": LINE_URL}

    out = capsys.readouterr().out
    assert f"telegram webhook: set {TELEGRAM_URL}" in out
    assert (
        "telegram commands: set /start, /help, /new, /language, /remember, /memory, /persona,"
        " /voice, /remind, /tasks, /timezone, /forget (default, ja, zh, th)" in out
    )
    assert f"line webhook: set {LINE_URL}" in out
    assert "line webhook test: ok" in out
    assert WEBHOOK_SECRET not in out and telegram_api.token not in out


async def test_a_second_run_changes_nothing_until_a_setting_changes(
    bot_settings: Settings,
    telegram_api: FakeTelegramAPI,
    line_api: FakeLineAPI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert await run_set_webhook(bot_settings) == 0
    capsys.readouterr()
    assert await run_set_webhook(bot_settings) == 0
    out = capsys.readouterr().out
    assert len(telegram_api.calls_of("setWebhook")) == 1
    assert len(telegram_api.calls_of("setMyCommands")) == 4
    assert len(line_puts(line_api)) == 1
    assert f"telegram webhook: unchanged {TELEGRAM_URL}" in out
    assert "telegram commands: unchanged" in out
    assert f"line webhook: unchanged {LINE_URL}" in out

    # Telegram never tells which secret it holds: a new one must still be registered.
    rotated = bot_settings.model_copy(
        update={"telegram_webhook_secret": SecretStr("rotated-secret-42")}
    )
    assert await run_set_webhook(rotated) == 0
    assert telegram_api.webhook_secret_token == "rotated-secret-42"
    assert await run_set_webhook(rotated, max_connections=10) == 0
    assert telegram_api.webhook_max_connections == 10
    assert len(telegram_api.calls_of("setWebhook")) == 3
    assert len(line_puts(line_api)) == 1


async def test_delete_removes_the_telegram_webhook_and_says_what_line_needs(
    bot_settings: Settings,
    telegram_api: FakeTelegramAPI,
    line_api: FakeLineAPI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert await run_set_webhook(bot_settings) == 0
    line_api.webhook_active = True
    capsys.readouterr()
    assert await run_set_webhook(bot_settings, delete=True) == 0
    [delete] = telegram_api.calls_of("deleteWebhook")
    assert delete.params == {"drop_pending_updates": False}
    assert telegram_api.webhook_url == ""
    out = capsys.readouterr().out
    assert f"telegram webhook: deleted {TELEGRAM_URL}" in out
    assert "turn off 'Use webhook'" in out

    assert await run_set_webhook(bot_settings, delete=True) == 0
    assert "telegram webhook: absent" in capsys.readouterr().out
    assert len(telegram_api.calls_of("deleteWebhook")) == 1


async def test_failures_are_reported_with_a_nonzero_exit(
    bot_settings: Settings,
    telegram_api: FakeTelegramAPI,
    line_api: FakeLineAPI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    telegram_api.fail_next("getMe", 401, "Unauthorized")
    line_api.webhook_test_status = 502
    line_api.webhook_test_reason = "Bad Gateway"
    assert await run_set_webhook(bot_settings) == 1
    out = capsys.readouterr().out
    assert "telegram: fail Telegram rejected TELEGRAM_BOT_TOKEN" in out
    assert "line webhook test: fail LINE could not deliver" in out and "502" in out
    assert telegram_api.token not in out
    assert telegram_api.calls_of("setWebhook") == []


async def test_the_public_url_must_be_https(
    bot_settings: Settings,
    telegram_api: FakeTelegramAPI,
    line_api: FakeLineAPI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    plain = bot_settings.model_copy(update={"public_url": "http://bot.example.test"})
    assert await run_set_webhook(plain) == 1
    out = capsys.readouterr().out
    assert "telegram: fail SKILLGATE_PUBLIC_URL must start with https://" in out
    assert "line: fail SKILLGATE_PUBLIC_URL must start with https://" in out
    assert telegram_api.calls_of("setWebhook") == [] and line_puts(line_api) == []
