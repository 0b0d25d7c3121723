"""The env file init writes and doctor --fix amends: read back as written, private, atomic."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from gateway.channels.telegram.settings import TelegramSettings
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
    settings = Settings(_env_file=path).section(TelegramSettings)  # type: ignore[call-arg]
    assert settings.telegram_webhook_secret is not None
    assert settings.telegram_webhook_secret.get_secret_value() == "s3cret"


def test_a_replaced_file_is_kept_beside_it(tmp_path: Path) -> None:
    path = tmp_path / ".env"
    path.write_text("OLD=1\n")
    kept = write_private(path, "NEW=1\n")
    assert kept == tmp_path / ".env.bak" and kept.read_text() == "OLD=1\n"
    assert path.read_text() == "NEW=1\n" and not list(tmp_path.glob(".env.*.tmp"))


@pytest.mark.parametrize(
    "value",
    ["model\\", "a\\'b", "'quoted'", 'say "hi"\\', "$HOME/x", "$", "a$b\\", "back\\slash", "x'"],
)
def test_every_value_reads_back_the_same_and_injects_no_setting(tmp_path: Path, value: str) -> None:
    # A trailing backslash inside single quotes escaped the closing quote: the next line's
    # setting was read from inside LLM_MODEL.
    path = tmp_path / ".env"
    text = f"LLM_MODEL={quote(value)}\nLLM_BASE_URL=http://127.0.0.1:1/v1\n"
    write_private(path, text)
    assert read_values(path) == {"LLM_MODEL": value, "LLM_BASE_URL": "http://127.0.0.1:1/v1"}


@pytest.mark.parametrize("value", ["m\rSKILLGATE_DATA_DIR=/tmp/x", "a\nb", "${HOME}", "nul\0"])
def test_a_value_that_cannot_read_back_the_same_is_refused(value: str) -> None:
    with pytest.raises(ValueError):
        quote(value)


def test_secrets_are_never_left_readable_by_others_and_the_backup_is_private(
    tmp_path: Path,
) -> None:
    path = tmp_path / "skillgate.env"
    path.write_text("OLD_SECRET=1\n")
    path.chmod(0o644)
    set_values(path, {"SKILLGATE_ADMIN_TOKEN": "t"}, "new")
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    kept = write_private(path, "NEW=1\n")
    assert kept is not None and stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_symlinked_env_file_is_written_where_it_points(tmp_path: Path) -> None:
    target = tmp_path / "etc" / "skillgate.env"
    target.parent.mkdir()
    target.write_text("LLM_MODEL=m\n")
    link = tmp_path / ".env"
    link.symlink_to(target)
    set_values(link, {"SKILLGATE_ADMIN_TOKEN": "t"}, "new")
    assert link.is_symlink() and read_values(target)["SKILLGATE_ADMIN_TOKEN"] == "t"
    write_private(link, "LLM_MODEL=n\n")
    assert link.is_symlink() and target.read_text() == "LLM_MODEL=n\n"


@pytest.mark.parametrize("mode", [0o600, 0o640])
def test_a_kept_symlinks_file_keeps_its_own_mode_not_the_links(tmp_path: Path, mode: int) -> None:
    # A link's own mode (what `lstat` reads) is 0777: read there, 0777 & 0640 would make a
    # private file group-readable. The mode is read from the file the link points to.
    target = tmp_path / "etc" / "skillgate.env"
    target.parent.mkdir()
    target.write_text("LLM_MODEL=m\n")
    target.chmod(mode)
    link = tmp_path / ".env"
    link.symlink_to(target)
    assert stat.S_IMODE(os.lstat(link).st_mode) == 0o777
    set_values(link, {"SKILLGATE_ADMIN_TOKEN": "t"}, "new")
    assert link.is_symlink()
    assert stat.S_IMODE(os.stat(target).st_mode) == mode
