"""What the synthesizer reads and remembers: evidence, consumed sessions, runs, the run lock."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlite_utils import Database

from gateway.skills.evidence import Rating, SessionEvidence, Turn
from gateway.skills.proposals import RunRecord
from gateway.store.base import QueriesBase, one


def _marks(values: Sequence[Any]) -> str:
    return ", ".join("?" for _ in values)


class SynthesisQueries(QueriesBase):
    """Finished sessions not yet consumed, run records and a leased lock."""

    async def unconsumed_sessions(self, *, after_id: int, limit: int) -> list[int]:
        """Ids of finished sessions no run consumed, above `after_id`, oldest first."""
        return await self.run(
            lambda db: [
                int(r["id"])
                for r in db.query(
                    "select s.id from sessions s where s.finished_at is not null and s.id > ?"
                    " and not exists (select 1 from consumed_sessions c where c.session_id = s.id)"
                    " order by s.id limit ?",
                    [after_id, limit],
                )
            ]
        )

    async def session_evidence(self, session_ids: Sequence[int]) -> list[SessionEvidence]:
        """Each session with its messages, their traces and ratings, in the order asked."""
        ids = list(session_ids)
        if not ids:
            return []

        def read(db: Database) -> list[SessionEvidence]:
            sessions = {
                r["id"]: SessionEvidence(session_id=r["id"], channel=r["channel"])
                for r in db.query(
                    f"select id, channel from sessions where id in ({_marks(ids)})", ids
                )
            }
            ratings: dict[int, list[Rating]] = {}
            for r in db.query(
                "select f.message_id, f.rating, f.comment from feedback f join messages m"
                f" on m.id = f.message_id where m.session_id in ({_marks(ids)}) order by f.id",
                ids,
            ):
                ratings.setdefault(r["message_id"], []).append(
                    Rating(rating=r["rating"], comment=r["comment"])
                )
            for r in db.query(
                "select m.id, m.session_id, m.role, m.text, m.kind, t.skills_loaded,"
                " t.tools_used, t.completed, t.error from messages m left join traces t"
                f" on t.message_id = m.id where m.session_id in ({_marks(ids)})"
                " order by m.session_id, m.id",
                ids,
            ):
                sessions[r["session_id"]].turns.append(
                    Turn(
                        message_id=r["id"],
                        role=r["role"],
                        text=r["text"],
                        kind=r["kind"],
                        skills_loaded=json.loads(r["skills_loaded"] or "[]"),
                        tools_used=json.loads(r["tools_used"] or "[]"),
                        completed=bool(r["completed"]) if r["completed"] is not None else True,
                        error=r["error"],
                        ratings=ratings.get(r["id"], []),
                    )
                )
            return [sessions[i] for i in ids if i in sessions]

        return await self.run(read)

    async def consume_sessions(self, session_ids: Sequence[int], run_id: int, at: float) -> None:
        """Remember that a run read these sessions, so no later run reads them again."""
        rows = [(sid, run_id, at) for sid in session_ids]

        def consume(db: Database) -> None:
            with db.atomic():
                db.conn.executemany(
                    "insert or ignore into consumed_sessions (session_id, run_id, consumed_at)"
                    " values (?, ?, ?)",
                    rows,
                )

        await self.run(consume)

    async def start_run(self, trigger: str, model: str | None, at: float) -> int:
        """Open a run record."""
        return await self.run(
            lambda db: int(
                db.execute(
                    "insert into synthesis_runs (trigger, model, started_at) values (?, ?, ?)",
                    [trigger, model, at],
                ).lastrowid
                or 0
            )
        )

    async def finish_run(self, run: RunRecord) -> None:
        """Store a run's final counts, timing and error."""
        row = run.model_dump(exclude={"id", "trigger", "started_at"})
        await self.run(
            lambda db: db.execute(
                f"update synthesis_runs set {', '.join(f'{k} = ?' for k in row)} where id = ?",
                [*row.values(), run.id],
            )
        )

    async def list_runs(self, limit: int = 20) -> list[RunRecord]:
        """Recent runs, newest first."""
        return await self.run(
            lambda db: [
                RunRecord.model_validate(dict(r))
                for r in db.query("select * from synthesis_runs order by id desc limit ?", [limit])
            ]
        )

    async def acquire_lock(self, name: str, holder: str, now: float, lease: float) -> bool:
        """Take (or renew) a named lease; False while another holder's lease runs."""
        return await self.run(
            lambda db: (
                db.execute(
                    "insert into locks (name, holder, expires_at) values (?, ?, ?)"
                    " on conflict (name) do update set holder = excluded.holder,"
                    " expires_at = excluded.expires_at"
                    " where locks.holder = excluded.holder or locks.expires_at < ?",
                    [name, holder, now + lease, now],
                ).rowcount
                == 1
            )
        )

    async def release_lock(self, name: str, holder: str) -> None:
        """Give a lease back, if it is still ours."""
        await self.run(
            lambda db: db.execute("delete from locks where name = ? and holder = ?", [name, holder])
        )

    async def lock_holder(self, name: str, now: float) -> str | None:
        """Who holds an unexpired lease, if anyone."""
        row = await self.run(
            lambda db: one(
                db, "select holder from locks where name = ? and expires_at >= ?", [name, now]
            )
        )
        return None if row is None else str(row["holder"])
