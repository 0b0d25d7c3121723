"""A consistent copy of the database file, taken while the gateway may be writing to it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from gateway.errors import StoreError


def online_copy(source: Path, target: Path) -> list[int]:
    """Copy `source` with SQLite's online backup API; returns the copy's schema versions."""
    if not source.is_file():
        raise StoreError(f"no database at {source}")
    try:
        src = sqlite3.connect(source, timeout=10.0)
        try:
            dest = sqlite3.connect(target)
            try:
                src.backup(dest)
                dest.execute("pragma journal_mode = delete")  # one self-contained file
                check = dest.execute("pragma quick_check").fetchone()[0]
                versions = [r[0] for r in dest.execute("select version from schema_migrations")]
            finally:
                dest.close()
        finally:
            src.close()
    except sqlite3.Error as exc:
        raise StoreError(f"cannot back up {source}: {exc}") from exc
    if check != "ok":
        raise StoreError(f"the copy of {source} failed its integrity check: {check}")
    return sorted(versions)
