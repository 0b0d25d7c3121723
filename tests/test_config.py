"""Settings: every documented variable, parsed and checked."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gateway.config import Settings, load_settings
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
    assert s.telegram_admin_ids == [11, 22]
    assert s.line_admin_ids == ["Uaaa", "Ubbb"]
    assert s.telegram_api_base_url == "http://localhost:8081/bot"
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
        load_settings()


def test_a_bad_secret_is_named_but_never_echoed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TELEGRAM_WEBHOOK_SECRET", "has spaces and $ymbols")
    with pytest.raises(ConfigError) as info:
        load_settings()
    assert "TELEGRAM_WEBHOOK_SECRET" in str(info.value)
    assert "ymbols" not in str(info.value)


def test_every_setting_is_in_env_example_and_the_settings_reference() -> None:
    names = {f.validation_alias for f in Settings.model_fields.values() if f.validation_alias}
    example = (ROOT / ".env.example").read_text()
    reference = (ROOT / "docs" / "SETTINGS.md").read_text()
    for name in names:
        assert re.search(rf"^#?\s*{name}=", example, re.M), f"{name} missing from .env.example"
        assert f"`{name}`" in reference, f"{name} missing from docs/SETTINGS.md"
