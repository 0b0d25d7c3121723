"""Every command the install and serve's banner print runs as printed, in a new shell.

A fresh clone's install (its install found made: tests/fresh_clone.py) links `skillgate`
into ~/.local/bin when that folder is on PATH, else prints the line that puts it there;
serve's banner names each command the way this shell finds it. Each printed command is
run in a new `bash -c` with the user's PATH, as a person would paste it.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.fresh_clone import fresh_clone, plain_env

BANNER = (
    "from gateway.cli.banner import next_steps\n"
    "from gateway.config import Settings\n"
    "for line in next_steps(Settings(), '127.0.0.1', 8080): print(line)\n"
)


def shell(line: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`line` in a new shell, as typed."""
    return subprocess.run(
        ["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


def printed(text: str) -> list[str]:
    """The commands between backticks that run skillgate."""
    return sorted({c for c in re.findall(r"`([^`]+)`", text) if "skillgate " in c})


def run_each(commands: list[str], cwd: Path, env: dict[str, str]) -> None:
    """Each command with --help added: found, and its subcommand known."""
    assert commands
    for command in commands:
        done = shell(f"{command} --help", cwd, env)
        assert done.returncode == 0, (command, done.stderr)
        assert "usage: skillgate" in done.stdout, (command, done.stdout)


def test_with_local_bin_on_path_the_install_links_skillgate_and_the_banner_says_skillgate(
    tmp_path: Path,
) -> None:
    clone = fresh_clone(tmp_path)
    env = plain_env(tmp_path / "home")
    env["PATH"] = f"{tmp_path / 'home' / '.local' / 'bin'}:/usr/bin:/bin"
    done = shell("scripts/install", clone, env)
    assert done.returncode == 0, done.stderr
    assert "works in any folder" in done.stderr
    assert shell("skillgate --version", tmp_path, env).returncode == 0
    banner = shell(f'{clone}/.venv/bin/python -c "{BANNER}"', tmp_path, env).stdout
    assert "not on this shell's PATH" not in banner
    commands = printed(banner)
    assert all(c.startswith("skillgate ") for c in commands), commands
    run_each(commands, tmp_path, env)


def test_without_it_each_printed_command_names_the_form_that_runs(tmp_path: Path) -> None:
    clone = fresh_clone(tmp_path)
    env = plain_env(tmp_path / "home")  # PATH=/usr/bin:/bin: no folder of the user's
    done = shell("scripts/install", clone, env)
    assert done.returncode == 0, done.stderr
    assert shell("skillgate --version", clone, env).returncode != 0
    # The install's last lines: a line to paste, and the path to type.
    (export,) = re.findall(r"^skillgate:\s+(export PATH=\S+)", done.stderr, re.M)
    assert shell(f"{export} && skillgate --version", tmp_path, env).returncode == 0
    assert shell(".venv/bin/skillgate --version", clone, env).returncode == 0
    # The banner: every command by its full path, and the same export line.
    banner = shell(f'{clone}/.venv/bin/python -c "{BANNER}"', tmp_path, env).stdout
    commands = printed(banner)
    assert all(c.startswith(f"{clone}/.venv/bin/skillgate ") for c in commands), commands
    run_each(commands, tmp_path, env)
    (hint,) = re.findall(r"`(export PATH=[^`]+)`", banner)
    assert shell(f"{hint} && skillgate --version", tmp_path, env).returncode == 0


def test_a_named_command_is_written_the_way_this_shell_runs_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gateway.shell import as_typed_here

    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "skillgate").write_text("#!/bin/sh\n")
    (venv / "skillgate").chmod(0o755)
    monkeypatch.setattr("sys.executable", str(venv / "python"))
    said = "the model is down: `skillgate doctor` checks it"
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # not on PATH: by its path
    assert as_typed_here(said) == f"the model is down: `{venv / 'skillgate'} doctor` checks it"
    monkeypatch.setenv("PATH", f"{venv}:/usr/bin:/bin")  # on PATH: as it is
    assert as_typed_here(said) == said
