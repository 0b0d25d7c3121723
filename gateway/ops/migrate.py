"""`skillgate migrate-to-postgres`: copy a SQLite data dir's database into PostgreSQL.

The SQLite file is copied first with the online backup API and the copy is brought
to the latest schema, so the source is never changed. The target is migrated to the
same schema and must hold no data yet. Every table is copied in one transaction with
the same ids, identity sequences continue after the highest id, and the row counts
are compared before committing. Skill files stay where they are: the data dir's
`skills/` folder becomes the volume the replicas share (docs/SCALING.md).
"""

from __future__ import annotations

import sqlite3
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg

from gateway.errors import ConfigError, StoreError
from gateway.store import SqliteStore
from gateway.store.backup import online_copy
from gateway.store.postgres import PostgresStore, redact_url

TABLES = (
    "sessions",
    "messages",
    "attachments",
    "traces",
    "feedback",
    "inbox",
    "skills",
    "meta",
    "awaiting",
    "synthesis_runs",
    "proposals",
    "rejections",
    "skill_versions",
    "consumed_sessions",
    "session_showings",
    "deliveries",
    "card_deliveries",
    "reviewer_names",
    "skill_switches",
    "run_dropped",
    "same_claim_checks",
    "repeat_notices",
    "repeat_notice_items",
    "repeat_notice_copies",
    "console_signouts",
    "quota_counts",
    "deleted_sessions",
    "chat_languages",
    "user_languages",
    "user_voices",
    "user_memory",
    "memory_opt_ins",
    "group_lines",
    "chat_personas",
    "tool_confirmations",
    "tool_usage",
    "user_names",
    "skill_looks",
    "scheduled_tasks",
    "task_runs",
    "user_timezones",
    "judge_calibrations",
    "trial_pairs",
)
"""Every table with data, parents before the tables that reference them."""
SKIPPED = ("schema_migrations", "locks", "skill_files")
"""Written by each database itself: versions, leases that mean nothing elsewhere, and what
start-up last read from the skill files (read again from the files at the next start)."""


@dataclass
class Copied:
    """What was copied: rows per table."""

    source: Path
    target: str
    rows: dict[str, int] = field(default_factory=dict)

    def describe(self) -> str:
        total = sum(self.rows.values())
        busy = ", ".join(f"{t} {n}" for t, n in self.rows.items() if n)
        return f"copied {total} rows from {self.source} to {self.target}" + (
            f" ({busy})" if busy else ""
        )


async def migrate_to_postgres(source: Path, url: str) -> Copied:
    """Copy the SQLite database at `source` into the empty PostgreSQL database at `url`."""
    if not source.is_file():
        raise ConfigError(f"no SQLite database at {source}")
    with tempfile.TemporaryDirectory(prefix="skillgate-migrate-") as tmp:
        snapshot = Path(tmp) / "skillgate.db"
        online_copy(source, snapshot)
        async with SqliteStore(snapshot):  # brings the copy to the latest schema
            pass
        async with PostgresStore(url, max_size=2) as target:  # migrated to the same schema
            return await _copy(snapshot, target, Copied(source, redact_url(url)))


async def _copy(snapshot: Path, target: PostgresStore, copied: Copied) -> Copied:
    conn = sqlite3.connect(snapshot)
    conn.row_factory = sqlite3.Row
    try:
        found = {
            r[0]
            for r in conn.execute(
                "select name from sqlite_master where type = 'table' and name not like 'sqlite_%'"
            )
        }
        unknown = found - set(TABLES) - set(SKIPPED)
        if unknown:
            raise StoreError(f"tables this version cannot copy: {', '.join(sorted(unknown))}")
        async with target.connection() as pg, pg.transaction():
            for table in TABLES:
                if await pg.fetchval(f"select exists (select 1 from {table})"):
                    raise ConfigError(
                        f"{copied.target} already holds data (table {table}); migrate into"
                        " an empty database"
                    )
            for table in TABLES:
                copied.rows[table] = await _copy_table(conn, pg, table)
    finally:
        conn.close()
    return copied


async def _copy_table(conn: sqlite3.Connection, pg: asyncpg.Connection, table: str) -> int:
    types = {
        r["column_name"]: r["data_type"]
        for r in await pg.fetch(
            "select column_name, data_type from information_schema.columns"
            " where table_name = $1 and table_schema = current_schema()",
            table,
        )
    }
    columns = [r[1] for r in conn.execute(f"pragma table_info({table})")]
    if set(columns) != set(types):
        raise StoreError(f"table {table} differs between SQLite and PostgreSQL")
    casts = [_caster(types[c]) for c in columns]
    rows = [
        tuple(cast(value) for cast, value in zip(casts, row, strict=True))
        for row in conn.execute(f"select {', '.join(columns)} from {table}")
    ]
    if rows:
        await pg.copy_records_to_table(table, records=rows, columns=columns)
    if "id" in columns and types["id"] == "bigint":
        await pg.execute(
            f"select setval(pg_get_serial_sequence('{table}', 'id'),"
            f" coalesce(max(id), 1), max(id) is not null) from {table}"
        )
    count = int(await pg.fetchval(f"select count(*) from {table}"))
    if count != len(rows):
        raise StoreError(f"table {table}: {len(rows)} rows read but {count} stored")
    return count


def _caster(data_type: str) -> Any:
    """SQLite hands back what a column was given; PostgreSQL's binary copy wants its type."""
    if data_type == "double precision":
        return lambda v: None if v is None else float(v)
    if data_type in ("bigint", "integer", "smallint"):
        return lambda v: None if v is None else int(v)
    return lambda v: None if v is None else str(v)
