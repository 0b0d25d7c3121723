"""Keeping downloads after their turn, only when SKILLGATE_KEEP_MEDIA asks: inside the data dir.

The file's name is its content hash and the extension of its sniffed type; nothing the
platform said (file names, paths) goes into it.
"""

from __future__ import annotations

import hashlib
import mimetypes
import os
from pathlib import Path

_EXTRA = {"audio/ogg": ".ogg", "audio/wav": ".wav", "text/plain": ".txt", "image/jpeg": ".jpg"}


def keep(root: Path, data: bytes, mime: str) -> str:
    """Write `data` under `root` (private to the owner); the path relative to `root`."""
    digest = hashlib.sha256(data).hexdigest()
    suffix = _EXTRA.get(mime) or mimetypes.guess_extension(mime) or ".bin"
    name = f"{digest[:2]}/{digest[:32]}{suffix}"
    path = root / name
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not path.exists():
        partial = path.with_suffix(path.suffix + ".part")
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(partial, path)  # never a half-written file under the final name
    return name


def discard(root: Path, names: list[str]) -> int:
    """Remove kept files (names as `keep` returned them) when a forget or retention deleted
    their last attachment; a file already gone is fine. Returns how many were removed."""
    removed = 0
    base = root.resolve()
    for name in names:
        path = (root / name).resolve()
        if not path.is_relative_to(base):
            continue  # only ever a file this module wrote
        try:
            path.unlink()
        except FileNotFoundError:
            continue
        removed += 1
    return removed
