"""What the synthesizer reads and remembers, on PostgreSQL: evidence, runs, the run lock."""

from __future__ import annotations

import json
from collections.abc import Sequence

from gateway.skills.evidence import Rating, SessionEvidence, Turn
from gateway.skills.proposals import RunRecord
from gateway.store.postgres.base import PgQueriesBase


class PgSynthesisQueries(PgQueriesBase):
    """Finished sessions not yet consumed, run records and a leased lock."""

    async def unconsumed_sessions(self, *, after_id: int, limit: int) -> list[int]:
        """Ids of finished sessions no run consumed, above `after_id`, oldest first."""
        rows = await self._fetch(
            "select s.id from sessions s where s.finished_at is not null and s.id > $1"
            " and not exists (select 1 from consumed_sessions c where c.session_id = s.id)"
            " order by s.id limit $2",
            after_id,
            None if limit < 0 else limit,
        )
        return [int(r["id"]) for r in rows]

    async def session_evidence(self, session_ids: Sequence[int]) -> list[SessionEvidence]:
        """Each session with its messages, their traces and ratings, in the order asked."""
        ids = list(session_ids)
        if not ids:
            return []
        async with self._tx() as conn:
            # One snapshot for the three reads, as one closure on the SQLite thread sees.
            await conn.execute("set transaction isolation level repeatable read, read only")
            sessions = {
                r["id"]: SessionEvidence(session_id=r["id"], channel=r["channel"])
                for r in await conn.fetch(
                    "select id, channel from sessions where id = any($1::bigint[])", ids
                )
            }
            ratings: dict[int, list[Rating]] = {}
            for r in await conn.fetch(
                "select f.message_id, f.rating, f.comment from feedback f join messages m"
                " on m.id = f.message_id where m.session_id = any($1::bigint[]) order by f.id",
                ids,
            ):
                ratings.setdefault(r["message_id"], []).append(
                    Rating(rating=r["rating"], comment=r["comment"])
                )
            for r in await conn.fetch(
                "select m.id, m.session_id, m.role, m.text, m.kind, t.skills_loaded,"
                " t.tools_used, t.completed, t.error from messages m left join traces t"
                " on t.message_id = m.id where m.session_id = any($1::bigint[])"
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

    async def consume_sessions(self, session_ids: Sequence[int], run_id: int, at: float) -> None:
        """Remember that a run read these sessions, so no later run reads them again."""
        ids = list(session_ids)
        if not ids:
            return
        await self._execute(
            "insert into consumed_sessions (session_id, run_id, consumed_at)"
            " select unnest($1::bigint[]), $2::bigint, $3::double precision"
            " on conflict do nothing",
            ids,
            run_id,
            at,
        )

    async def start_run(self, trigger: str, model: str | None, at: float) -> int:
        """Open a run record."""
        run_id = await self._fetchval(
            "insert into synthesis_runs (trigger, model, started_at) values ($1, $2, $3)"
            " returning id",
            trigger,
            model,
            at,
        )
        return int(run_id or 0)

    async def finish_run(self, run: RunRecord) -> None:
        """Store a run's final counts, timing and error."""
        row = run.model_dump(exclude={"id", "trigger", "started_at"})
        assignments = ", ".join(f"{k} = ${i}" for i, k in enumerate(row, start=1))
        await self._execute(
            f"update synthesis_runs set {assignments} where id = ${len(row) + 1}",
            *row.values(),
            run.id,
        )

    async def list_runs(self, limit: int = 20) -> list[RunRecord]:
        """Recent runs, newest first."""
        rows = await self._fetch(
            "select * from synthesis_runs order by id desc limit $1",
            None if limit < 0 else limit,
        )
        return [RunRecord.model_validate(r) for r in rows]

    async def acquire_lock(self, name: str, holder: str, now: float, lease: float) -> bool:
        """Take (or renew) a named lease; False while another holder's lease runs."""
        # One statement: a concurrent taker waits for the row, then sees the winner's lease.
        taken = await self._execute(
            "insert into locks (name, holder, expires_at) values ($1, $2, $3)"
            " on conflict (name) do update set holder = excluded.holder,"
            " expires_at = excluded.expires_at"
            " where locks.holder = excluded.holder or locks.expires_at < $4",
            name,
            holder,
            now + lease,
            now,
        )
        return taken == 1

    async def release_lock(self, name: str, holder: str) -> None:
        """Give a lease back, if it is still ours."""
        await self._execute("delete from locks where name = $1 and holder = $2", name, holder)

    async def lock_holder(self, name: str, now: float) -> str | None:
        """Who holds an unexpired lease, if anyone."""
        holder = await self._fetchval(
            "select holder from locks where name = $1 and expires_at >= $2", name, now
        )
        return None if holder is None else str(holder)
