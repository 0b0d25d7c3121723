"""`skillgate doctor` against the fakes, healthy and broken."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from pydantic import SecretStr

from gateway.channels.telegram.settings import TelegramSettings
from gateway.config import Settings
from gateway.operator import Check
from gateway.ops.doctor import check_data_dir, collect, run_doctor
from gateway.ops.webhooks import run_set_webhook
from gateway.shell import as_typed_here
from tests.fakes.line_api import FakeLineAPI
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegramAPI
from tests.ops.conftest import LINE_SECRET, LLM_KEY, PUBLIC_URL, WEBHOOK_SECRET
from tests.serve_process import skillgate


def by_name(checks: list[Check]) -> dict[str, Check]:
    return {c.name: c for c in checks}


async def registered(settings: Settings, line_api: FakeLineAPI) -> None:
    """What an operator has after `set-webhook` and switching on 'Use webhook' for LINE."""
    assert await run_set_webhook(settings) == 0
    line_api.webhook_active = True


async def test_a_healthy_gateway_passes_every_check(
    bot_settings: Settings, line_api: FakeLineAPI, capsys: pytest.CaptureFixture[str]
) -> None:
    await registered(bot_settings, line_api)
    checks = by_name(await collect(bot_settings))
    assert checks["telegram bot"].status == "ok"
    assert "@skillgate_test_bot" in checks["telegram bot"].detail
    assert checks["telegram webhook"].status == "ok"
    assert f"{PUBLIC_URL}/webhook/telegram" in checks["telegram webhook"].detail
    assert checks["line bot"].status == "ok" and "FakeBot" in checks["line bot"].detail
    assert checks["line webhook"].status == "ok"
    assert checks["model"].status == "ok"
    assert checks["disk"].status == "ok"
    assert checks["data dir"].status in {"ok", "warn"}
    assert not [c for c in checks.values() if c.status == "fail"]
    capsys.readouterr()
    assert await run_doctor(bot_settings) == 0


async def test_broken_webhooks_and_model_fail_with_a_fix(
    bot_settings: Settings,
    telegram_api: FakeTelegramAPI,
    line_api: FakeLineAPI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    await registered(bot_settings, line_api)
    telegram_api.webhook_url = "https://old.example.test/hook"
    line_api.webhook_active = False
    down = bot_settings.model_copy(update={"llm_base_url": "http://127.0.0.1:9/v1"})
    checks = by_name(await collect(down))
    assert checks["telegram webhook"].status == "fail"
    assert "https://old.example.test/hook" in checks["telegram webhook"].detail
    assert "skillgate set-webhook" in checks["telegram webhook"].fix
    assert checks["line webhook"].status == "fail"
    assert "Use webhook" in checks["line webhook"].fix
    assert checks["model"].status == "fail" and checks["model"].fix

    capsys.readouterr()
    assert await run_doctor(down) == 1
    out = capsys.readouterr().out
    # The fix is printed the way this shell runs it (by its path where `skillgate` is not
    # on PATH).
    assert "FAIL telegram webhook" in out
    assert as_typed_here("fix: run `skillgate set-webhook`") in out
    assert LLM_KEY not in out and telegram_api.token not in out


async def test_telegram_delivery_errors_and_a_changed_secret_are_failures(
    bot_settings: Settings, telegram_api: FakeTelegramAPI, line_api: FakeLineAPI
) -> None:
    await registered(bot_settings, line_api)
    telegram_api.pending_update_count = 3
    telegram_api.last_error_date = int(time.time()) - 60
    telegram_api.last_error_message = "Wrong response from the webhook: 401 Unauthorized"
    check = by_name(await collect(bot_settings))["telegram webhook"]
    assert check.status == "fail"
    assert "401 Unauthorized" in check.detail and "3 update(s) pending" in check.detail
    assert "TELEGRAM_WEBHOOK_SECRET" in check.fix

    telegram_api.pending_update_count = 0
    telegram_api.last_error_message = None
    rotated = bot_settings.model_copy(update={"telegram_webhook_secret": SecretStr("new-one-1")})
    check = by_name(await collect(rotated))["telegram webhook"]
    assert check.status == "fail" and "changed" in check.detail


async def test_rejected_credentials_say_where_to_get_new_ones(
    bot_settings: Settings, telegram_api: FakeTelegramAPI, line_api: FakeLineAPI
) -> None:
    telegram_api.fail_next("getMe", 401, "Unauthorized")
    line_api.fail_next("/v2/bot/info", 401, "Authentication failed")
    checks = by_name(await collect(bot_settings))
    assert checks["telegram bot"].status == "fail" and "BotFather" in checks["telegram bot"].fix
    assert checks["line bot"].status == "fail"
    assert "LINE_CHANNEL_ACCESS_TOKEN" in checks["line bot"].fix


async def test_speech_to_text_is_tried_with_a_real_request(
    bot_settings: Settings, fake_llm: FakeOpenAI
) -> None:
    assert "not set up" in by_name(await collect(bot_settings))["speech-to-text"].detail
    voice = bot_settings.model_copy(update={"stt_model": "whisper-1"})
    assert by_name(await collect(voice))["speech-to-text"].status == "ok"
    [upload] = fake_llm.transcriptions
    assert upload["model"] == "whisper-1" and upload["data"].startswith(b"RIFF")
    fake_llm.transcription_status = 503
    down = by_name(await collect(voice))["speech-to-text"]
    assert down.status == "fail" and "the speech model is down" in down.detail


async def test_text_to_speech_is_tried_with_one_word(
    bot_settings: Settings, fake_llm: FakeOpenAI
) -> None:
    assert "not set up" in by_name(await collect(bot_settings))["text-to-speech"].detail
    spoken = bot_settings.model_copy(update={"tts_model": "tts-1", "tts_voices": "*=af_heart"})
    check = by_name(await collect(spoken))["text-to-speech"]
    assert check.status == "ok" and "af_heart" in check.detail
    [request] = fake_llm.speeches
    assert request == {
        "model": "tts-1",
        "input": "Hello.",
        "voice": "af_heart",
        "response_format": "opus",
    }
    fake_llm.speech_status = 503
    down = by_name(await collect(spoken))["text-to-speech"]
    assert down.status == "fail" and "the voice model is down" in down.detail
    assert "TTS_BASE_URL" in down.fix


async def test_pictures_are_tried_with_one_small_drawing(
    bot_settings: Settings, fake_llm: FakeOpenAI
) -> None:
    assert "not set up" in by_name(await collect(bot_settings))["pictures"].detail
    assert fake_llm.generations == []
    drawing = bot_settings.model_copy(update={"image_model": "gpt-image-1"})
    check = by_name(await collect(drawing))["pictures"]
    assert check.status == "ok" and "image/png" in check.detail
    [request] = fake_llm.generations
    assert request["model"] == "gpt-image-1" and request["response_format"] == "b64_json"
    fake_llm.image_status = 429
    refused = by_name(await collect(drawing))["pictures"]
    # Refused, with the server's own words and where to look.
    assert refused.status == "fail" and "billing hard limit reached" in refused.detail
    assert "IMAGE_BASE_URL" in refused.fix


async def test_a_world_writable_data_dir_fails(bot_settings: Settings) -> None:
    bot_settings.data_dir.mkdir(parents=True)
    bot_settings.data_dir.chmod(0o777)
    check = by_name(await collect(bot_settings))["data dir"]
    assert check.status == "fail" and "world-writable" in check.detail
    assert f"`chmod 750 {bot_settings.data_dir.resolve()}`" in check.fix


async def test_conversations_readable_by_other_users_are_a_warning(bot_settings: Settings) -> None:
    bot_settings.data_dir.mkdir(parents=True)
    bot_settings.db_path.write_bytes(b"")
    bot_settings.db_path.chmod(0o644)
    bot_settings.data_dir.chmod(0o755)
    check = check_data_dir(bot_settings)
    assert check.status == "warn" and "readable by every user" in check.detail
    bot_settings.data_dir.chmod(0o750)  # others cannot enter: the file mode no longer matters
    assert check_data_dir(bot_settings).status == "ok"


async def test_doctor_json_lists_the_checks_and_keeps_the_exit_status(
    bot_settings: Settings, line_api: FakeLineAPI, tmp_path: Path
) -> None:
    await registered(bot_settings, line_api)
    line_api.webhook_active = False
    env_file = tmp_path / "skillgate.env"
    telegram = bot_settings.section(TelegramSettings)
    env_file.write_text(
        "\n".join(
            [
                f"SKILLGATE_DATA_DIR={bot_settings.data_dir}",
                f"SKILLGATE_PUBLIC_URL={PUBLIC_URL}",
                f"TELEGRAM_BOT_TOKEN={telegram.telegram_bot_token.get_secret_value()}",  # type: ignore[union-attr]
                f"TELEGRAM_WEBHOOK_SECRET={WEBHOOK_SECRET}",
                f"TELEGRAM_API_BASE_URL={telegram.telegram_api_base_url}",
                f"LINE_CHANNEL_SECRET={LINE_SECRET}",
                f"LINE_CHANNEL_ACCESS_TOKEN={line_api.access_token}",
                f"LINE_API_BASE_URL={line_api.base_url}",
                f"LLM_BASE_URL={bot_settings.llm_base_url}",
                "LLM_MODEL=fake-model",
            ]
        )
    )
    code, out, _err = await skillgate("--env-file", str(env_file), "doctor", "--json", env={})
    assert code == 1
    checks = {c["name"]: c for c in json.loads(out)}
    assert set(checks["line webhook"]) == {"name", "status", "detail", "fix"}
    assert checks["line webhook"]["status"] == "fail"
    assert checks["telegram webhook"]["status"] == "ok"
    assert checks["model"]["status"] == "ok"


async def test_group_context_warns_while_telegrams_privacy_mode_hides_group_messages(
    bot_settings: Settings, telegram_api: FakeTelegramAPI, line_api: FakeLineAPI
) -> None:
    await registered(bot_settings, line_api)
    assert "telegram groups" not in by_name(await collect(bot_settings))  # context is off
    with_context = bot_settings.model_copy(update={"group_context_messages": 20})
    warned = by_name(await collect(with_context))["telegram groups"]
    assert warned.status == "warn" and "privacy mode" in warned.detail
    assert "Group Privacy" in warned.fix
    telegram_api.reads_group_messages = True  # privacy mode turned off in @BotFather
    assert "telegram groups" not in by_name(await collect(with_context))
