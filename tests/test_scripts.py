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
"""
FAKE_SKILLGATE = """#!/bin/sh
echo "skillgate $*" >> "$(dirname "$0")/../../calls"
"""


def checkout(tmp_path: Path) -> Path:
    """A copy of the project's serve script and pyproject, with a .venv whose tools only
    record how they were called (an install that needs no network)."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "serve", tmp_path / "scripts" / "serve")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name, text in (("pip", FAKE_PIP), ("skillgate", FAKE_SKILLGATE), ("python", "")):
        tool = bin_dir / name
        tool.write_text(text or "#!/bin/sh\n")
        tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    return tmp_path


def serve(root: Path) -> list[str]:
    """Run scripts/serve once; the calls its tools saw, then forget them."""
    subprocess.run([root / "scripts" / "serve", "--port", "9"], check=True, timeout=30)
    calls = root / "calls"
    seen = calls.read_text().splitlines()
    calls.unlink()
    return seen


def test_scripts_serve_reinstalls_when_pyproject_changed_since_the_last_install(
    tmp_path: Path,
) -> None:
    root = checkout(tmp_path)
    first = serve(root)  # never installed by this script: install
    assert "pip install --quiet -e ." in first and first[-1] == "skillgate serve --port 9"
    assert serve(root) == ["skillgate serve --port 9"]  # nothing changed: just serve
    with (root / "pyproject.toml").open("a") as pyproject:
        pyproject.write("\n# a new dependency, say\n")
    again = serve(root)
    assert "pip install --quiet -e ." in again and again[-1] == "skillgate serve --port 9"
    assert serve(root) == ["skillgate serve --port 9"]


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
