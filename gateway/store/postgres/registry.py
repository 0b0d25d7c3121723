"""The skill registry and small key-value state on PostgreSQL."""

from __future__ import annotations

import time

from gateway.core.records import Awaiting, SkillRecord
from gateway.store.postgres.base import PgQueriesBase

_PK = "channel = $1 and chat_id = $2 and user_id = $3"


def _upsert(table: str, columns: tuple[str, ...], key: tuple[str, ...]) -> str:
    """Insert a row, or replace every other column of the row with the same key."""
    marks = ", ".join(f"${i}" for i in range(1, len(columns) + 1))
    updates = ", ".join(f"{c} = excluded.{c}" for c in columns if c not in key)
    return (
        f"insert into {table} ({', '.join(columns)}) values ({marks})"
        f" on conflict ({', '.join(key)}) do update set {updates}"
    )


_SKILL_COLUMNS = tuple(SkillRecord.model_fields)
_UPSERT_SKILL = _upsert("skills", _SKILL_COLUMNS, ("slug",))
_AWAITING_COLUMNS = tuple(Awaiting.model_fields)
_UPSERT_AWAITING = _upsert("awaiting", _AWAITING_COLUMNS, ("channel", "chat_id", "user_id"))


class PgRegistryQueries(PgQueriesBase):
    """Registry rows for skills, and the `meta` table for run state."""

    async def skill_records(self) -> list[SkillRecord]:
        """Every registered skill, by slug."""
        # Byte order, as SQLite sorts text, whatever the database's collation.
        rows = await self._fetch('select * from skills order by slug collate "C"')
        return [SkillRecord.model_validate(r) for r in rows]

    async def get_skill_record(self, slug: str) -> SkillRecord | None:
        """One registry row."""
        row = await self._fetchrow("select * from skills where slug = $1", slug)
        return None if row is None else SkillRecord.model_validate(row)

    async def put_skill_records(self, records: list[SkillRecord]) -> None:
        """Insert or replace registry rows in one transaction."""
        rows = []
        for rec in records:
            row = rec.model_dump()
            row["enabled"] = int(row["enabled"])
            rows.append(tuple(row[c] for c in _SKILL_COLUMNS))
        if not rows:
            return
        async with self._tx() as conn:
            await conn.executemany(_UPSERT_SKILL, rows)

    async def get_meta(self, key: str) -> str | None:
        """A stored value, or None."""
        row = await self._fetchrow("select value from meta where key = $1", key)
        return None if row is None else str(row["value"])

    async def set_meta(self, key: str, value: str) -> None:
        """Store a value durably."""
        await self._execute(
            "insert into meta (key, value) values ($1, $2)"
            " on conflict (key) do update set value = excluded.value",
            key,
            value,
        )

    async def set_awaiting(self, question: Awaiting) -> None:
        """Remember a question asked of a user (replacing any earlier one in that chat)."""
        row = question.model_dump()
        await self._execute(_UPSERT_AWAITING, *(row[c] for c in _AWAITING_COLUMNS))

    async def take_awaiting(
        self, channel: str, chat_id: str, user_id: str, now: float | None = None
    ) -> Awaiting | None:
        """Remove and return the user's open question, if it has not expired."""
        at = time.time() if now is None else now
        # One statement: whoever deletes the row is the one who takes it.
        row = await self._fetchrow(
            f"delete from awaiting where {_PK} returning *", channel, chat_id, user_id
        )
        if row is None:
            return None
        return Awaiting.model_validate(row) if row["expires_at"] >= at else None

    async def peek_awaiting(
        self, channel: str, chat_id: str, user_id: str, now: float | None = None
    ) -> Awaiting | None:
        """The user's open, unexpired question, left in place."""
        at = time.time() if now is None else now
        row = await self._fetchrow(
            f"select * from awaiting where {_PK} and expires_at >= $4",
            channel,
            chat_id,
            user_id,
            at,
        )
        return None if row is None else Awaiting.model_validate(row)
