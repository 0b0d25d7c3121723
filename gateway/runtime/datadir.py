"""The data dir of a SQLite gateway: created private, and held by one server at a time.

SQLite means one process writes the database: a second `skillgate serve` on the same
data dir would answer the same updates and race the first over every write. `serve`
therefore holds an exclusive lock on `skillgate.lock` in the data dir while it runs
(flock: the kernel drops it when the process ends, however it ends) and writes who it
is into the file, so that a refused second server and `skillgate doctor` can say which
process holds it. With PostgreSQL the data dir is the skills volume replicas share, and
is not locked. The terminal commands (chat, proposals, backup) work beside a server.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import socket
import time
from datetime import UTC, datetime
from pathlib import Path

from gateway.errors import SkillgateError

LOCK_FILE = "skillgate.lock"
ATTEMPTS = 20
"""Tries, 50 ms apart, before a held lock counts as held (a doctor may be peeking at it)."""


class DataDirInUse(SkillgateError):
    """Another server holds the data dir."""


def make_private(path: Path) -> None:
    """Create the data dir (if missing) readable by its owner only: it holds conversations."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)


class DataDirLock:
    """The held lock; released by `release` or when the process ends."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            os.close(fd)  # closing drops the lock


def lock_data_dir(data_dir: Path, url: str | None = None) -> DataDirLock:
    """Hold the data dir for this server; DataDirInUse when another server holds it.

    `url`, where the server answers, is written with the holder: `skillgate doctor`
    asks that server how its model does rather than starting a model of its own.
    """
    make_private(data_dir)
    path = data_dir / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        for attempt in range(ATTEMPTS):
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if attempt == ATTEMPTS - 1:
                    raise
                time.sleep(0.05)
    except BlockingIOError:
        holder = _read(fd) or "another process"
        os.close(fd)
        raise DataDirInUse(
            f"{data_dir} is in use by another skillgate serve ({holder}): SQLite allows one"
            " server per data dir; stop that one first, or share PostgreSQL between replicas"
            " (docs/SCALING.md)"
        ) from None
    except BaseException:
        os.close(fd)
        raise
    since = datetime.now(UTC).isoformat(timespec="seconds")
    os.ftruncate(fd, 0)
    at = f", at {url}" if url else ""
    said = f"pid {os.getpid()} on {socket.gethostname()}, since {since}{at}\n"
    os.pwrite(fd, said.encode(), 0)
    return DataDirLock(path, fd)


def lock_holder(data_dir: Path) -> str | None:
    """Who holds the data dir now ("pid 123 on host, since ..."); None when no server does."""
    path = data_dir / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read(fd) or "a process that did not say which"
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def served_url(holder: str | None) -> str | None:
    """The URL a holder line names (`..., at http://127.0.0.1:8080`), if it names one."""
    found = re.search(r", at (https?://\S+)$", holder or "")
    return found.group(1) if found else None


def _read(fd: int) -> str:
    return os.pread(fd, 512, 0).decode("utf-8", "replace").strip()
