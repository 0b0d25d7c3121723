"""A fresh clone of this checkout for the tests of its scripts, without the network.

Its scripts and pyproject.toml, and a .venv that runs this interpreter on this checkout's
code, stamped as `scripts/install --on-board` leaves it: the scripts run as they are and
find their install made.
"""

from __future__ import annotations

import os
import shutil
import sys
import venv
from hashlib import sha256
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def fresh_clone(where: Path) -> Path:
    """The scripts and pyproject.toml of this checkout in a folder of their own, with a .venv
    stamped as installed with the on-board model."""
    clone = where / "skillgate"
    shutil.copytree(ROOT / "scripts", clone / "scripts")
    shutil.copy(ROOT / "pyproject.toml", clone / "pyproject.toml")
    # A venv of its own (no pip: nothing is installed) that sees this interpreter's
    # packages and this checkout's code, as an editable install would.
    venv.create(clone / ".venv", with_pip=False, symlinks=True)
    (site,) = (clone / ".venv" / "lib").glob("python*/site-packages")
    paths = [*(p for p in sys.path if p.endswith("-packages")), str(ROOT)]
    (site / "skillgate-test.pth").write_text("\n".join(paths) + "\n", encoding="utf-8")
    command = clone / ".venv" / "bin" / "skillgate"
    command.write_text(
        '#!/bin/sh\nexec "$(dirname "$(readlink -f "$0")")/python" -m gateway.cli "$@"\n',
        encoding="utf-8",
    )
    command.chmod(0o755)
    digest = sha256((clone / "pyproject.toml").read_bytes()).hexdigest()
    (clone / ".venv" / ".installed-pyproject").write_text(f"{digest} on-board\n")
    return clone


def plain_env(home: Path) -> dict[str, str]:
    """A new user's shell: no Skillgate or model setting, a home of its own."""
    ours = ("SKILLGATE_", "LLM_", "TELEGRAM_", "LINE_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(ours)}
    env["HOME"] = str(home)
    env["PATH"] = "/usr/bin:/bin"
    # This checkout's code, and wherever the on-board wheels are installed.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))
    return env
