"""Settings: every documented variable, parsed and checked."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from gateway.channels.line.settings import LineSettings
from gateway.channels.registry import checked, platforms
from gateway.channels.telegram.settings import TelegramSettings
from gateway.config import (
    AlertSettings,
    MediaSettings,
    ReviewSettings,
    Settings,
    SynthesisSettings,
    ToolsSettings,
    load_settings,
)
from gateway.core.settings import ModelSettings, Section
from gateway.errors import ConfigError

ROOT = Path(__file__).resolve().parent.parent


def test_lists_and_urls_are_normalised(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TELEGRAM_ADMIN_IDS", "11, 22,")
    monkeypatch.setenv("LINE_ADMIN_IDS", "Uaaa,Ubbb")
    monkeypatch.setenv("TELEGRAM_API_BASE_URL", "http://localhost:8081")
    monkeypatch.setenv("LLM_BASE_URL", "http://127.0.0.1:11434/v1/")
    monkeypatch.setenv("SKILLGATE_REQUIRE_APPROVAL", "false")
    monkeypatch.setenv("LLM_API_KEY", "")
    s = load_settings()
    telegram, line = s.section(TelegramSettings), s.section(LineSettings)
    assert telegram.telegram_admin_ids == [11, 22]
    assert line.line_admin_ids == ["Uaaa", "Ubbb"]
    assert telegram.telegram_api_base_url == "http://localhost:8081/bot"
    assert s.llm_base_url == "http://127.0.0.1:11434/v1"
    assert s.require_approval is False
    assert s.llm_api_key is None


def test_dotenv_is_read(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("SKILLGATE_SESSION_IDLE_MINUTES=0\nLLM_MODEL=m\n")
    s = load_settings()  # the test runs in tmp_path
    assert s.session_idle_minutes == 0 and s.llm_model == "m"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("SKILLGATE_SESSION_IDLE_MINUTES", "-1"),
        ("SKILLGATE_SYNTHESIS_INTERVAL_MINUTES", "often"),
        ("SKILLGATE_REQUIRE_APPROVAL", "perhaps"),
        ("TELEGRAM_ADMIN_IDS", "alice"),
        ("LLM_BASE_URL", "localhost:11434"),
        ("SKILLGATE_PUBLIC_URL", "ftp://x"),
    ],
)
def test_an_invalid_value_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError, match=name):
        checked(load_settings())  # as every command reads them: each platform's too


def test_a_bad_secret_is_named_but_never_echoed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TELEGRAM_WEBHOOK_SECRET", "has spaces and $ymbols")
    with pytest.raises(ConfigError) as info:
        checked(load_settings())
    assert "TELEGRAM_WEBHOOK_SECRET" in str(info.value)
    assert "ymbols" not in str(info.value)


def test_every_setting_is_in_env_example_and_the_settings_reference() -> None:
    models = [Settings, *(p.section for p in platforms())]
    names = {f.validation_alias for m in models for f in m.model_fields.values()}
    example = (ROOT / ".env.example").read_text()
    reference = (ROOT / "docs" / "SETTINGS.md").read_text()
    for name in names:
        assert re.search(rf"^#?\s*{name}=", example, re.M), f"{name} missing from .env.example"
        assert f"`{name}`" in reference, f"{name} missing from docs/SETTINGS.md"


SECTIONS: list[type[Section]] = [
    ModelSettings,
    MediaSettings,
    SynthesisSettings,
    ReviewSettings,
    ToolsSettings,
    AlertSettings,
]


def test_each_setting_is_declared_in_one_section_at_most() -> None:
    # Declared twice, the composed Settings would keep one declaration and drop the other.
    seen: dict[str, str] = {}
    for section in SECTIONS:
        assert issubclass(Settings, section)
        for name in section.model_fields:
            assert name not in seen, f"{name} is in {seen.get(name)} and {section.__name__}"
            seen[name] = section.__name__
    assert set(seen) <= set(Settings.model_fields)


def _function(validator: object) -> object:
    """A validator's function, unbound (a classmethod is bound to each class anew)."""
    func = getattr(validator, "func", None)
    return getattr(func, "__func__", func)


def test_every_validator_of_a_section_survives_the_composition() -> None:
    # Validators are merged by attribute name: two sections' `_unset` would drop one.
    composed = Settings.__pydantic_decorators__
    for section in SECTIONS:
        own = section.__pydantic_decorators__
        for kind in ("field_validators", "model_validators"):
            kept = getattr(composed, kind)
            for name, found in getattr(own, kind).items():
                assert _function(kept.get(name)) is _function(found), f"{section.__name__}.{name}"


def test_a_section_checks_what_it_declares_through_the_settings() -> None:
    with pytest.raises(ConfigError, match="STT_BASE_URL"):
        load_settings(_env_file=None, STT_BASE_URL="ftp://stt")
    with pytest.raises(ConfigError, match="LLM_LOCAL_MODEL"):
        load_settings(_env_file=None, LLM_LOCAL_MODEL="smollm2", LLM_BASE_URL="http://m/v1")
    s = load_settings(_env_file=None, SEARXNG_URL=" ", STT_MODEL="", LLM_MODEL="")
    assert (s.searxng_url, s.stt_model, s.llm_model) == (None, None, None)


def test_a_section_is_built_alone_by_field_or_variable_name() -> None:
    assert AlertSettings(alert_model_minutes=3).alert_model_minutes == 3
    assert AlertSettings(SKILLGATE_ALERT_MODEL_MINUTES=4).alert_model_minutes == 4
    media = MediaSettings(max_voice_mb=1.5, download_memory_mb=2)
    assert media.download_cap("voice") == int(1.5 * 1024 * 1024)
    assert media.download_memory_bytes == 2 * 1024 * 1024


def test_the_settings_are_handed_on_as_their_sections() -> None:
    s = Settings(_env_file=None, llm_model="m", max_image_mb=2)
    changed = s.model_copy(update={"llm_model": "other"})
    assert isinstance(changed, ModelSettings) and changed.llm_model == "other"
    assert isinstance(s, MediaSettings) and s.download_cap("image") == 2 * 1024 * 1024


def test_a_platforms_section_is_read_from_the_sources_its_settings_were(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TELEGRAM_STREAMING", "off")
    env_file = tmp_path / "other.env"
    env_file.write_text("TELEGRAM_ADMIN_IDS=7\n")
    (tmp_path / ".env").write_text("TELEGRAM_ADMIN_IDS=8\n")
    settings = Settings(_env_file=env_file, telegram_max_messages_per_second=5)  # type: ignore[call-arg]
    telegram = settings.section(TelegramSettings)
    assert telegram.telegram_streaming == "off"  # the environment
    assert telegram.telegram_admin_ids == [7]  # the same env file
    assert telegram.telegram_max_messages_per_second == 5  # a keyword value
    assert settings.section(TelegramSettings) is telegram  # read once
    polling = settings.model_copy(update={"telegram_polling": True, "llm_model": "m"})
    assert polling.section(TelegramSettings).telegram_polling and polling.llm_model == "m"
    assert polling.section(TelegramSettings).telegram_admin_ids == [7]
    assert not settings.section(TelegramSettings).telegram_polling


def test_settings_that_choose_their_sources_choose_their_sections_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Isolated(Settings):
        @classmethod
        def settings_customise_sources(
            cls, settings_cls: Any, init_settings: Any, *others: Any, **named: Any
        ) -> tuple[Any, ...]:
            return (init_settings,)

    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", "1:from-the-environment")
    given = Isolated(telegram_admin_ids=[3]).section(TelegramSettings)
    assert given.telegram_bot_token is None and given.telegram_admin_ids == [3]
    assert Settings().section(TelegramSettings).telegram_bot_token is not None


def test_a_bad_platform_value_given_by_keyword_is_named_and_never_echoed() -> None:
    settings = Settings(_env_file=None, telegram_webhook_secret="no spaces allowed")  # type: ignore[call-arg]
    with pytest.raises(ConfigError) as info:
        settings.section(TelegramSettings)
    assert "telegram_webhook_secret" in str(info.value)
    assert "allowed" not in str(info.value)
