"""Commands named to an operator, written the way their shell runs them.

`scripts/install` links `skillgate` into ~/.local/bin when that folder is on PATH; where it
could not, a message that says "run `skillgate doctor`" would fail as typed. Every text that
names a command for an operator to type (doctor's and init's checks and fixes, the alerts in
the log and to the admins, serve's banner) goes through `as_typed_here`.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path


def unfound_command() -> Path | None:
    """This install's `skillgate` when the shell would not find it by name (else None)."""
    mine = Path(sys.executable).parent / "skillgate"
    if not mine.exists():
        return None  # run from the source tree (`python -m gateway.cli`): nothing to type
    found = shutil.which("skillgate")
    if found is not None and Path(found).resolve() == mine.resolve():
        return None
    return mine


def as_typed_here(text: str) -> str:
    """`text` with each `skillgate ...` it names written the way this shell runs it: by its
    full path when `skillgate` is not on PATH (an install that could not link it)."""
    if "`skillgate " not in text:
        return text
    mine = unfound_command()
    return text if mine is None else text.replace("`skillgate ", f"`{mine} ")
