"""Migration 63 on a SQLite database that already holds skills: the registry is rebuilt with
`imported` allowed, its rows and its content-time triggers kept."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import sqlite_utils

from gateway.store.migrations import MIGRATIONS
from gateway.store.sqlite import migrate

INSERT = (
    "insert into skills (slug, source, enabled, review_status, content_hash, created_at,"
    " updated_at) values (?, ?, 1, 'live', 'h', 1.0, ?)"
)


def test_the_registry_keeps_its_rows_and_triggers_and_takes_imported(tmp_path: Path) -> None:
    db = sqlite_utils.Database(tmp_path / "upgrade.db")
    before = [m for m in MIGRATIONS if m[0] < 63]
    assert migrate(db, before)[-1] == before[-1][0]
    db.conn.execute(INSERT, ("kept", "custom", 2.0))
    db.conn.commit()
    assert migrate(db) == [63]
    assert list(db.conn.execute("select slug, source, content_since from skills")) == [
        ("kept", "custom", 2.0)
    ]
    db.conn.execute("update skills set content_hash = 'h2', updated_at = 5.0 where slug = 'kept'")
    db.conn.execute(INSERT, ("brought", "imported", 3.0))
    assert list(db.conn.execute("select slug, content_since from skills order by slug")) == [
        ("brought", 3.0),
        ("kept", 5.0),
    ]
    with pytest.raises(sqlite3.IntegrityError, match="CHECK constraint failed"):
        db.conn.execute(INSERT, ("other", "elsewhere", 3.0))
    columns = {row[1]: row[4] for row in db.conn.execute("pragma table_info(proposals)")}
    assert columns["origin"] is None and columns["files"] == "'{}'"
