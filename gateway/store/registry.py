"""The skill registry (source, enabled, review status, hash) and small key-value state."""

from __future__ import annotations

import time

from sqlite_utils import Database

from gateway.core.records import Awaiting, SkillRecord
from gateway.store.base import QueriesBase, one


class RegistryQueries(QueriesBase):
    """Registry rows for skills, and the `meta` table for run state."""

    async def skill_records(self) -> list[SkillRecord]:
        """Every registered skill, by slug."""
        return await self.run(
            lambda db: [
                SkillRecord.model_validate(r)
                for r in db.query("select * from skills order by slug")
            ]
        )

    async def get_skill_record(self, slug: str) -> SkillRecord | None:
        """One registry row."""
        row = await self.run(lambda db: one(db, "select * from skills where slug = ?", [slug]))
        return None if row is None else SkillRecord.model_validate(row)

    async def put_skill_records(self, records: list[SkillRecord]) -> None:
        """Insert or replace registry rows in one transaction."""

        def put(db: Database) -> None:
            with db.atomic():
                for rec in records:
                    db.table("skills").upsert(rec.model_dump(), pk="slug")

        await self.run(put)

    async def get_meta(self, key: str) -> str | None:
        """A stored value, or None."""
        row = await self.run(lambda db: one(db, "select value from meta where key = ?", [key]))
        return None if row is None else str(row["value"])

    async def set_meta(self, key: str, value: str) -> None:
        """Store a value durably."""
        await self.run(
            lambda db: db.execute(
                "insert into meta (key, value) values (?, ?)"
                " on conflict (key) do update set value = excluded.value",
                [key, value],
            )
        )

    async def set_awaiting(self, question: Awaiting) -> None:
        """Remember a question asked of a user (replacing any earlier one in that chat)."""
        await self.run(
            lambda db: db.table("awaiting").upsert(
                question.model_dump(), pk=("channel", "chat_id", "user_id")
            )
        )

    async def take_awaiting(
        self, channel: str, chat_id: str, user_id: str, now: float | None = None
    ) -> Awaiting | None:
        """Remove and return the user's open question, if it has not expired."""
        at = time.time() if now is None else now

        def take(db: Database) -> Awaiting | None:
            with db.atomic():
                row = one(
                    db,
                    "select * from awaiting where channel = ? and chat_id = ? and user_id = ?",
                    [channel, chat_id, user_id],
                )
                if row is None:
                    return None
                db.execute(
                    "delete from awaiting where channel = ? and chat_id = ? and user_id = ?",
                    [channel, chat_id, user_id],
                )
            return Awaiting.model_validate(row) if row["expires_at"] >= at else None

        return await self.run(take)

    async def peek_awaiting(
        self, channel: str, chat_id: str, user_id: str, now: float | None = None
    ) -> Awaiting | None:
        """The user's open, unexpired question, left in place."""
        at = time.time() if now is None else now
        row = await self.run(
            lambda db: one(
                db,
                "select * from awaiting where channel = ? and chat_id = ? and user_id = ?"
                " and expires_at >= ?",
                [channel, chat_id, user_id, at],
            )
        )
        return None if row is None else Awaiting.model_validate(row)
