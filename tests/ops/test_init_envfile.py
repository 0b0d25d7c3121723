"""The env file init writes and doctor --fix amends: read back as written, private, atomic."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from gateway.config import Settings
from gateway.ops.init.envfile import quote, read_values, set_values, write_private


def test_values_read_back_as_written_by_the_parser_settings_use(tmp_path: Path) -> None:
    values = ["plain-1:A_b", "with space", "it's", 'a "q" \\ b', "x#y", "$HOME"]
    path = tmp_path / ".env"
    write_private(path, "".join(f"K{i}={quote(v)}\n" for i, v in enumerate(values)))
    assert read_values(path) == {f"K{i}": v for i, v in enumerate(values)}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    with pytest.raises(ValueError, match="line break"):
        quote("${HOME}")  # the parser would expand it, quoted or not


def test_set_values_replaces_in_place_adds_the_rest_and_keeps_the_mode(tmp_path: Path) -> None:
    path = tmp_path / "skillgate.env"
    path.write_text("# mine\nLLM_MODEL=m\nTELEGRAM_WEBHOOK_SECRET=\n")
    path.chmod(0o640)
    set_values(path, {"TELEGRAM_WEBHOOK_SECRET": "s3cret", "SKILLGATE_ADMIN_TOKEN": "t"}, "new")
    assert path.read_text() == (
        "# mine\nLLM_MODEL=m\nTELEGRAM_WEBHOOK_SECRET=s3cret\n\n# new\nSKILLGATE_ADMIN_TOKEN=t\n"
    )
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    settings = Settings(_env_file=path)  # type: ignore[call-arg]
    assert settings.telegram_webhook_secret is not None
    assert settings.telegram_webhook_secret.get_secret_value() == "s3cret"


def test_a_replaced_file_is_kept_beside_it(tmp_path: Path) -> None:
    path = tmp_path / ".env"
    path.write_text("OLD=1\n")
    kept = write_private(path, "NEW=1\n")
    assert kept == tmp_path / ".env.bak" and kept.read_text() == "OLD=1\n"
    assert path.read_text() == "NEW=1\n" and not list(tmp_path.glob(".env.*.tmp"))
