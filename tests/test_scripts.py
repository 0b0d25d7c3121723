"""The scripts a newcomer runs first, and what the default test run tells them."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

FAKE_PIP = """#!/bin/sh
echo "pip $*" >> "$(dirname "$0")/../../calls"
echo "Collecting aiohttp<4,>=3.10 (from skillgate==0.1.0)"
echo "  Downloading aiohttp-3.13.0.tar.gz (7.5 MB)"
"""
FAKE_SKILLGATE = """#!/bin/sh
echo "skillgate $*" >> "$(dirname "$0")/../../calls"
"""


def checkout(tmp_path: Path) -> Path:
    """A copy of the project's serve script and pyproject, with a .venv whose tools only
    record how they were called (an install that needs no network)."""
    (tmp_path / "scripts").mkdir()
    for script in ("install", "serve", "init"):
        shutil.copy(ROOT / "scripts" / script, tmp_path / "scripts" / script)
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    # A model configured: serve installs the gateway alone (no on-board model).
    (tmp_path / ".env").write_text("LLM_BASE_URL=http://127.0.0.1:9/v1\n")
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name, text in (("pip", FAKE_PIP), ("skillgate", FAKE_SKILLGATE), ("python", "")):
        tool = bin_dir / name
        tool.write_text(text or "#!/bin/sh\n")
        tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    return tmp_path


def serve(root: Path, script: str = "serve") -> list[str]:
    """Run a script once; the calls its tools saw, then forget them."""
    done = subprocess.run(
        [root / "scripts" / script, "--port", "9"],
        check=True,
        timeout=30,
        capture_output=True,
        text=True,
    )
    calls = root / "calls"
    seen = calls.read_text().splitlines()
    calls.unlink()
    return [*seen, *(f"said: {line}" for line in done.stderr.splitlines())]


def ran(seen: list[str]) -> list[str]:
    """The tools called, without what the scripts said."""
    return [line for line in seen if not line.startswith("said: ")]


def test_scripts_serve_reinstalls_when_pyproject_changed_since_the_last_install(
    tmp_path: Path,
) -> None:
    root = checkout(tmp_path)
    first = serve(root)  # never installed by this script: install, saying so as it goes
    assert "pip install --progress-bar off -e ." in first
    assert "skillgate serve --generate-token --port 9" in first
    said = [line for line in first if line.startswith("said: ")]
    assert said[0] == (
        "said: skillgate: pyproject.toml changed since the last install: installing again"
        " into .venv"
    )
    assert "said:   aiohttp<4,>=3.10" in said  # each package as pip collects it
    # It ends saying how long it took, then (when the link cannot go on PATH) how to run it.
    assert any(line.startswith("said: skillgate: installed in ") for line in said)
    # Nothing changed: nothing installed, just serve.
    assert ran(serve(root)) == ["skillgate serve --generate-token --port 9"]
    with (root / "pyproject.toml").open("a") as pyproject:
        pyproject.write("\n# a new dependency, say\n")
    again = serve(root, "init")  # the same install step, then init
    assert "pip install --progress-bar off -e ." in again and "skillgate init --port 9" in again
    assert ran(serve(root)) == ["skillgate serve --generate-token --port 9"]


def test_scripts_serve_with_no_model_installs_the_on_board_one_and_asks_nothing(
    tmp_path: Path,
) -> None:
    root = checkout(tmp_path)
    (root / ".env").unlink()  # a fresh clone: nothing configured
    first = serve(root)
    assert "pip install --progress-bar off -e .[local]" in first
    assert any(line.startswith("pip install --quiet --no-deps") for line in first)
    assert "skillgate serve --generate-token --port 9" in first
    assert ran(serve(root)) == ["skillgate serve --generate-token --port 9"]


def test_the_default_test_run_says_why_tests_were_skipped(tmp_path: Path) -> None:
    (tmp_path / "test_skipping.py").write_text(
        "import pytest\n\n\n"
        "def test_needs_a_server() -> None:\n"
        "    pytest.skip('no server for this one')\n"
    )
    # The project's own configuration (pyproject.toml), on a test file of its own.
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml"), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )
    assert "SKIPPED [1]" in result.stdout and "no server for this one" in result.stdout
