"""The env file `skillgate init` writes and `doctor --fix` amends: private, replaced atomically.

It holds the bot's and the model's secrets, so it is created readable by its owner only
(0600), never left readable by others when amended (a group may keep reading it: the
service's, as deploy/README.md sets it), and written whole to a temporary file beside it,
then renamed over the old one: a crash leaves the old file or the new one, never half of
either. A symlinked env file is written where it points, the link kept. Every value is
quoted so that the parser pydantic-settings uses reads it back the same, or refused.
"""

from __future__ import annotations

import io
import os
import re
import tempfile
from pathlib import Path

from dotenv import dotenv_values

_PLAIN = re.compile(r"^[A-Za-z0-9_@%+=:,./~-]*$")


def quote(value: str) -> str:
    """A value as one env-file word: plain when it can be, else quoted; ValueError for a value
    that would not read back the same (a line break, a carriage return, `${`)."""
    if any(ch in value for ch in "\n\r\0") or "${" in value:
        # A carriage return ends a line for the parser too; no quoting keeps ${...} from
        # being expanded.
        raise ValueError("a setting cannot hold a line break, a carriage return or ${")
    if _PLAIN.match(value):
        word = value
    elif "'" not in value and "\\" not in value:
        word = f"'{value}'"  # taken literally: nothing inside needs escaping
    else:
        escaped = value.replace("\\", "\\\\").replace('"', '\\"')
        word = f'"{escaped}"'  # python-dotenv and systemd both undo these escapes
    if dotenv_values(stream=io.StringIO(f"K={word}\n")).get("K") != value:
        raise ValueError("this value would not read back the same from an env file")
    return word


def read_values(path: Path) -> dict[str, str]:
    """KEY=value pairs of an env file (the same parser pydantic-settings uses)."""
    return {k: v for k, v in dotenv_values(path).items() if v is not None}


def write_private(path: Path, text: str) -> Path | None:
    """Write `text` to `path` (mode 0600); an existing file is kept as `path.bak` first (0600
    too: it holds the old secrets)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path = _target(path)
    kept = None
    if path.exists():
        kept = path.with_name(path.name + ".bak")
        _write(kept, path.read_bytes(), 0o600)
    _write(path, text.encode("utf-8"), 0o600)
    return kept


def set_values(path: Path, values: dict[str, str], comment: str) -> None:
    """Set KEY=value lines in an existing env file: replaced in place, or added at its end;
    never left readable by others."""
    path = _target(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    todo = dict(values)
    for i, line in enumerate(lines):
        key = line.split("=", 1)[0].strip().removeprefix("export ").strip()
        if "=" in line and not line.lstrip().startswith("#") and key in todo:
            lines[i] = f"{key}={quote(todo.pop(key))}"
    if todo:
        lines += ["", f"# {comment}", *(f"{k}={quote(v)}" for k, v in todo.items())]
    mode = os.stat(path).st_mode & PRIVATE or 0o600
    _write(path, ("\n".join(lines) + "\n").encode("utf-8"), mode)


PRIVATE = 0o640
"""The most an env file holding secrets is readable: its owner, and its group (the service's)."""


def _target(path: Path) -> Path:
    """Where a (symlinked) env file really is: written there, the link left as it is."""
    return Path(os.path.realpath(path))


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
