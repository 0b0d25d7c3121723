"""The skill registry (source, enabled, review status, hash) and small key-value state."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from gateway.core.records import Awaiting, SkillFileRecord, SkillRecord, SkillSwitch
from gateway.store.sql import Conn, QueriesBase, insert_sql, query, transaction

_PK = "channel = ? and chat_id = ? and user_id = ?"


def _upsert(table: str, columns: tuple[str, ...], key: tuple[str, ...]) -> str:
    """Insert a row, or replace every other column of the row with the same key."""
    updates = ", ".join(f"{c} = excluded.{c}" for c in columns if c not in key)
    return insert_sql(table, columns, f"on conflict ({', '.join(key)}) do update set {updates}")


_SKILL_COLUMNS = tuple(SkillRecord.model_fields)
UPSERT_SKILL = _upsert("skills", _SKILL_COLUMNS, ("slug",))
"""Write one registry row (the triggers keep `content_since`); arguments from `skill_args`."""
_FILE_COLUMNS = tuple(f.name for f in dataclasses.fields(SkillFileRecord))
_UPSERT_FILE = _upsert("skill_files", _FILE_COLUMNS, ("slug",))
_AWAITING_COLUMNS = tuple(Awaiting.model_fields)
_UPSERT_AWAITING = _upsert("awaiting", _AWAITING_COLUMNS, ("channel", "chat_id", "user_id"))


def skill_args(record: SkillRecord) -> list[Any]:
    """A registry row's values for `UPSERT_SKILL`."""
    row = record.model_dump()
    row["enabled"] = int(row["enabled"])
    return [row[c] for c in _SKILL_COLUMNS]


class RegistryQueries(QueriesBase):
    """Registry rows for skills, and the `meta` table for run state."""

    @query
    async def skill_records(self, c: Conn) -> list[SkillRecord]:
        """Every registered skill, by slug."""
        rows = await c.fetch("select * from skills")
        # Sorted here, by code point (SQLite's byte order of UTF-8), whatever the collation.
        return [SkillRecord.model_validate(r) for r in sorted(rows, key=lambda r: r["slug"])]

    @query
    async def get_skill_record(self, c: Conn, slug: str) -> SkillRecord | None:
        """One registry row."""
        return await skill_record(c, slug)

    @transaction
    async def put_skill_records(self, c: Conn, records: list[SkillRecord]) -> None:
        """Insert or replace registry rows in one transaction."""
        if records:
            await c.executemany(UPSERT_SKILL, [skill_args(r) for r in records])

    @query
    async def skill_files(self, c: Conn) -> dict[str, SkillFileRecord]:
        """What start-up last read from each skill file, by slug."""
        rows = await c.fetch(f"select {', '.join(_FILE_COLUMNS)} from skill_files")
        return {r["slug"]: SkillFileRecord(**r) for r in rows}

    @transaction
    async def put_skill_files(self, c: Conn, files: list[SkillFileRecord], gone: list[str]) -> None:
        """Record files as read now, and forget the files no longer on disk."""
        if files:
            rows = [[getattr(f, col) for col in _FILE_COLUMNS] for f in files]
            await c.executemany(_UPSERT_FILE, rows)
        if gone:
            await c.executemany("delete from skill_files where slug = ?", [[s] for s in gone])

    @transaction
    async def switch_skill(
        self, c: Conn, slug: str, enabled: bool, by: str, reason: str | None, at: float
    ) -> SkillRecord | None:
        """Turn a registered skill off or on and record who did it and why; None if unknown."""
        row = await c.fetchrow(f"select * from skills where slug = ? {c.dialect.for_update}", slug)
        if row is None:
            return None
        await c.execute(
            "update skills set enabled = ?, updated_at = ? where slug = ?", int(enabled), at, slug
        )
        await c.execute(
            "insert into skill_switches (slug, enabled, switched_by, reason, switched_at)"
            " values (?, ?, ?, ?, ?)",
            slug,
            int(enabled),
            by,
            reason,
            at,
        )
        record = SkillRecord.model_validate(row)
        return record.model_copy(update={"enabled": enabled, "updated_at": at})

    @query
    async def skill_switches(self, c: Conn, slug: str, limit: int = 20) -> list[SkillSwitch]:
        """The hand switches of one skill, newest first."""
        rows = await c.fetch(
            "select slug, enabled, switched_by, reason, switched_at from skill_switches"
            " where slug = ? order by id desc limit ?",
            slug,
            c.dialect.limit(limit),
        )
        return [SkillSwitch.model_validate(r) for r in rows]

    @query
    async def last_switches(self, c: Conn) -> dict[str, SkillSwitch]:
        """The latest hand switch of every skill that has one."""
        rows = await c.fetch(
            "select slug, enabled, switched_by, reason, switched_at from skill_switches w"
            " where id = (select max(id) from skill_switches x where x.slug = w.slug)"
        )
        return {r["slug"]: SkillSwitch.model_validate(r) for r in rows}

    @query
    async def get_meta(self, c: Conn, key: str) -> str | None:
        """A stored value, or None."""
        row = await c.fetchrow("select value from meta where key = ?", key)
        return None if row is None else str(row["value"])

    @query
    async def set_meta(self, c: Conn, key: str, value: str) -> None:
        """Store a value durably."""
        await c.execute(
            "insert into meta (key, value) values (?, ?)"
            " on conflict (key) do update set value = excluded.value",
            key,
            value,
        )

    @query
    async def set_awaiting(self, c: Conn, question: Awaiting) -> None:
        """Remember a question asked of a user (replacing any earlier one in that chat)."""
        row = question.model_dump()
        await c.execute(_UPSERT_AWAITING, *(row[col] for col in _AWAITING_COLUMNS))

    @transaction
    async def take_awaiting(
        self, c: Conn, channel: str, chat_id: str, user_id: str, now: float | None = None
    ) -> Awaiting | None:
        """Remove and return the user's open question, if it has not expired."""
        at = time.time() if now is None else now
        # One statement: whoever deletes the row is the one who takes it.
        row = await c.fetchrow(
            f"delete from awaiting where {_PK} returning *", channel, chat_id, user_id
        )
        if row is None:
            return None
        return Awaiting.model_validate(row) if row["expires_at"] >= at else None

    @query
    async def peek_awaiting(
        self, c: Conn, channel: str, chat_id: str, user_id: str, now: float | None = None
    ) -> Awaiting | None:
        """The user's open, unexpired question, left in place."""
        return await peek(c, channel, chat_id, user_id, time.time() if now is None else now)


async def skill_record(c: Conn, slug: str) -> SkillRecord | None:
    """The registry row of one skill, if it has one."""
    row = await c.fetchrow("select * from skills where slug = ?", slug)
    return None if row is None else SkillRecord.model_validate(row)


async def peek(c: Conn, channel: str, chat_id: str, user_id: str, now: float) -> Awaiting | None:
    """The user's open question in the chat, unless it expired before `now`."""
    row = await c.fetchrow(
        f"select * from awaiting where {_PK} and expires_at >= ?", channel, chat_id, user_id, now
    )
    return None if row is None else Awaiting.model_validate(row)


AWAITING_COLUMNS = ", ".join(f"a.{name} as awaiting_{name}" for name in Awaiting.model_fields)
"""`peek`'s row as select items of a larger statement (no marks), each named `awaiting_...`."""
AWAITING_JOIN = (
    "left join awaiting a on a.channel = ? and a.chat_id = ? and a.user_id = ?"
    " and a.expires_at >= ?"
)
"""Their from-clause item; the marks take what `peek` takes, in its order."""


def awaiting_in(row: dict[str, Any]) -> Awaiting | None:
    """The open question in a row selected with `AWAITING_COLUMNS`, if there is one."""
    if row["awaiting_channel"] is None:
        return None
    return Awaiting.model_validate(
        {name: row[f"awaiting_{name}"] for name in Awaiting.model_fields}
    )
