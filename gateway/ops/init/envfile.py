"""The env file `skillgate init` writes and `doctor --fix` amends: private, replaced atomically.

It holds the bot's and the model's secrets, so it is created readable by its owner only
(0600) and written whole to a temporary file beside it, then renamed over the old one:
a crash leaves the old file or the new one, never half of either.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from dotenv import dotenv_values

_PLAIN = re.compile(r"^[A-Za-z0-9_@%+=:,./~-]*$")


def quote(value: str) -> str:
    """A value as one env-file word: plain when it can be, else quoted (read back the same)."""
    if _PLAIN.match(value):
        return value
    if "\n" in value or "${" in value:
        # No quoting keeps ${...} from being expanded by the parser pydantic-settings uses.
        raise ValueError("a setting cannot hold a line break or ${")
    if "'" not in value:
        return f"'{value}'"
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'  # python-dotenv and systemd both undo these escapes


def read_values(path: Path) -> dict[str, str]:
    """KEY=value pairs of an env file (the same parser pydantic-settings uses)."""
    return {k: v for k, v in dotenv_values(path).items() if v is not None}


def write_private(path: Path, text: str) -> Path | None:
    """Write `text` to `path` (mode 0600); an existing file is kept as `path.bak` first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    kept = None
    if path.exists():
        kept = path.with_name(path.name + ".bak")
        _write(kept, path.read_bytes(), os.stat(path).st_mode & 0o777 or 0o600)
    _write(path, text.encode("utf-8"), 0o600)
    return kept


def set_values(path: Path, values: dict[str, str], comment: str) -> None:
    """Set KEY=value lines in an existing env file: replaced in place, or added at its end."""
    lines = path.read_text(encoding="utf-8").splitlines()
    todo = dict(values)
    for i, line in enumerate(lines):
        key = line.split("=", 1)[0].strip().removeprefix("export ").strip()
        if "=" in line and not line.lstrip().startswith("#") and key in todo:
            lines[i] = f"{key}={quote(todo.pop(key))}"
    if todo:
        lines += ["", f"# {comment}", *(f"{k}={quote(v)}" for k, v in todo.items())]
    mode = os.stat(path).st_mode & 0o777
    _write(path, ("\n".join(lines) + "\n").encode("utf-8"), mode)


def _write(path: Path, data: bytes, mode: int) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as out:
            os.fchmod(out.fileno(), mode)
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
