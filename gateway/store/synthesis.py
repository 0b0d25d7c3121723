"""What the synthesizer reads and remembers: evidence, consumed sessions, runs, the run lock."""

from __future__ import annotations

import json
from collections.abc import Sequence

from gateway.core.prompt import attachment_label
from gateway.core.records import Rating, SessionEvidence, Turn
from gateway.review.repeats import RejectedRepeat
from gateway.store.messages import attachments_by_message
from gateway.store.notices import add_repeat_notice
from gateway.store.sql import Conn, QueriesBase, marks, query, transaction
from gateway.synthesis.calibration import Calibration
from gateway.synthesis.runs import Repeat, RunCheck, RunDropped, RunRecord

RATED_PAGE = 500
"""Ratings `rated_sessions` reads at a time, newest first."""
_RATED_SINCE_SHOWN = (
    "exists (select 1 from feedback f join messages m on m.id = f.message_id"
    " where m.session_id = s.id and f.updated_at > w.last_shown_at)"
)


class SynthesisQueries(QueriesBase):
    """Finished sessions not yet consumed, run records and a leased lock."""

    @query
    async def unconsumed_sessions(
        self,
        c: Conn,
        *,
        after_id: int,
        limit: int,
        since: float | None = None,
        fresh: bool = False,
    ) -> list[int]:
        """Ids of finished sessions no run consumed, above `after_id`, oldest first.

        With `since`, only sessions finished then or later: older evidence has had its window.
        With `fresh`, only those never shown to the model or rated since they last were.
        """
        window, params = ("and s.finished_at >= ?", [since]) if since is not None else ("", [])
        new = f"and (w.session_id is null or {_RATED_SINCE_SHOWN})" if fresh else ""
        rows = await c.fetch(
            "select s.id from sessions s left join session_showings w on w.session_id = s.id"
            f" where s.finished_at is not null and s.id > ? {window} {new}"
            " and not exists (select 1 from consumed_sessions c where c.session_id = s.id)"
            " order by s.id limit ?",
            after_id,
            *params,
            c.dialect.limit(limit),
        )
        return [int(r["id"]) for r in rows]

    @query
    async def shown_sessions(
        self, c: Conn, *, since: float | None, below: int, limit: int
    ) -> list[int]:
        """Unconsumed sessions shown fewer than `below` times and not rated since, newest first."""
        window, params = ("and s.finished_at >= ?", [since]) if since is not None else ("", [])
        rows = await c.fetch(
            "select s.id from sessions s join session_showings w on w.session_id = s.id"
            f" where s.finished_at is not null and w.shown < ? {window}"
            f" and not {_RATED_SINCE_SHOWN}"
            " and not exists (select 1 from consumed_sessions c where c.session_id = s.id)"
            " order by s.id desc limit ?",
            below,
            *params,
            c.dialect.limit(limit),
        )
        return [int(r["id"]) for r in rows]

    @query
    async def rated_sessions(self, c: Conn, exclude: Sequence[int], limit: int) -> list[int]:
        """Sessions with a rated normal answer, newest first (by their latest rated answer),
        none of `exclude` (a trial's held-out turns).

        Read from the newest rating backwards, `RATED_PAGE` at a time, until `limit` sessions
        are found: a trial runs beside the chats, and grouping every rating ever given (on
        SQLite's one store thread) took 100 ms at 50,000 ratings, every answer waiting.
        """
        ids = list(exclude)
        outside = f"and m.session_id not in ({marks(ids)})" if ids else ""
        found: dict[int, None] = {}
        below: list[int] = []
        while len(found) < limit:
            before = "and f.message_id < ?" if below else ""
            rows = await c.fetch(
                "select m.session_id, f.message_id from feedback f join messages m"
                " on m.id = f.message_id where m.role = 'assistant' and m.kind = 'normal'"
                f" and m.unsent_at is null and m.withheld = 0 {outside} {before}"
                " order by f.message_id desc limit ?",
                *ids,
                *below,
                c.dialect.limit(RATED_PAGE),
            )
            for r in rows:
                found.setdefault(int(r["session_id"]), None)
            if len(rows) < RATED_PAGE:
                break
            below = [int(rows[-1]["message_id"])]
        return list(found)[:limit]

    @transaction
    async def note_showings(self, c: Conn, session_ids: Sequence[int], at: float) -> None:
        """Count one more showing of each session, now."""
        await c.executemany(
            "insert into session_showings (session_id, shown, last_shown_at)"
            " select ?, 1, ? where exists (select 1 from sessions where id = ?)"
            " on conflict (session_id) do update set shown = session_showings.shown + 1,"
            " last_shown_at = excluded.last_shown_at",
            [(sid, at, sid) for sid in session_ids],
        )

    @transaction
    async def session_evidence(self, c: Conn, session_ids: Sequence[int]) -> list[SessionEvidence]:
        """Each session with its messages, their traces and ratings, in the order asked."""
        ids = list(session_ids)
        if not ids:
            return []
        if c.dialect.snapshot:
            # One snapshot for the three reads, so messages, traces and ratings agree.
            await c.execute(c.dialect.snapshot)
        sessions = {
            r["id"]: SessionEvidence(session_id=r["id"], channel=r["channel"])
            for r in await c.fetch(
                f"select id, channel from sessions where id in ({marks(ids)})", *ids
            )
        }
        ratings: dict[int, list[Rating]] = {}
        for r in await c.fetch(
            "select f.message_id, f.rating, f.comment from feedback f join messages m"
            f" on m.id = f.message_id where m.session_id in ({marks(ids)}) order by f.id",
            *ids,
        ):
            ratings.setdefault(r["message_id"], []).append(
                Rating(rating=r["rating"], comment=r["comment"])
            )
        for r in await c.fetch(
            "select m.id, m.session_id, m.role, m.text, m.kind, t.skills_loaded,"
            " t.tools_used, t.tool_calls, t.completed, t.error from messages m left join traces t"
            f" on t.message_id = m.id where m.session_id in ({marks(ids)})"
            # Answers that failed for the configuration teach nothing a skill could fix.
            " and m.unsent_at is null and m.withheld = 0 and coalesce(t.operator_error, 0) = 0"
            " order by m.session_id, m.id",
            *ids,
        ):
            sessions[r["session_id"]].turns.append(
                Turn(
                    message_id=r["id"],
                    role=r["role"],
                    text=r["text"],
                    kind=r["kind"],
                    skills_loaded=json.loads(r["skills_loaded"] or "[]"),
                    tools_used=json.loads(r["tools_used"] or "[]"),
                    tool_statuses=[
                        f"{c['server']}__{c['tool']} {c['status']}"
                        for c in json.loads(r["tool_calls"] or "[]")
                    ],
                    completed=bool(r["completed"]) if r["completed"] is not None else True,
                    error=r["error"],
                    ratings=ratings.get(r["id"], []),
                )
            )
        turns = [t for s in sessions.values() for t in s.turns if t.role == "user"]
        carried = await attachments_by_message(c, [t.message_id for t in turns])
        for turn in turns:
            # Labels only: what came with a message, never the media or a document's text.
            turn.attachments = [attachment_label(a) for a in carried.get(turn.message_id, [])]
        return [sessions[i] for i in ids if i in sessions]

    @transaction
    async def consume_sessions(
        self, c: Conn, session_ids: Sequence[int], run_id: int, at: float
    ) -> None:
        """Remember that a run read these sessions, so no later run reads them again."""
        rows = [(sid, run_id, at, sid) for sid in session_ids]
        if not rows:
            return
        # A session deleted while the run read it (retention, a forgotten user) is skipped.
        await c.executemany(
            "insert into consumed_sessions (session_id, run_id, consumed_at)"
            " select ?, ?, ? where exists (select 1 from sessions where id = ?)"
            " on conflict do nothing",
            rows,
        )

    @query
    async def start_run(self, c: Conn, trigger: str, model: str | None, at: float) -> int:
        """Open a run record."""
        run_id = await c.fetchval(
            "insert into synthesis_runs (trigger, model, started_at) values (?, ?, ?) returning id",
            trigger,
            model,
            at,
        )
        return int(run_id or 0)

    @query
    async def learning_tokens(self, c: Conn, since: float) -> int:
        """The tokens learning recorded on the runs started since `since`."""
        spent = await c.fetchval(
            "select coalesce(sum(prompt_tokens + completion_tokens), 0)"
            " from synthesis_runs where started_at >= ?",
            since,
        )
        return int(spent or 0)

    @transaction
    async def finish_run(
        self,
        c: Conn,
        run: RunRecord,
        dropped: Sequence[RunDropped] = (),
        checks: Sequence[RunCheck] = (),
        repeats: Sequence[RejectedRepeat] = (),
    ) -> None:
        """Store a run's final counts, timing and error, what it held back and its checks,
        and the admins' notice of the rejections it found repeated (with the run, so a crash
        never loses it: the next sync sends it)."""
        row = run.model_dump(exclude={"id", "trigger", "started_at"})
        await c.execute(
            f"update synthesis_runs set {', '.join(f'{k} = ?' for k in row)} where id = ?",
            *row.values(),
            run.id,
        )
        if dropped:
            await c.executemany(
                "insert into run_dropped"
                " (run_id, kind, name, reason, matched, matched_skill, detail)"
                " values (?, ?, ?, ?, ?, ?, ?)",
                [
                    (run.id, d.kind, d.name, d.reason, d.matched, d.matched_skill, d.detail)
                    for d in dropped
                ],
            )

        if checks:
            await c.executemany(
                "insert into same_claim_checks"
                " (run_id, name, decision, compared, reason, matched, matched_skill)"
                " values (?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        run.id,
                        k.name,
                        k.decision,
                        json.dumps(k.compared, ensure_ascii=False),
                        k.reason,
                        k.matched,
                        k.matched_skill,
                    )
                    for k in checks
                ],
            )
        if run.finished_at is not None:
            await add_repeat_notice(c, run.id, repeats, run.finished_at)

    @query
    async def repeats_of(self, c: Conn, proposal_id: int, limit: int = 50) -> list[Repeat]:
        """The suppressed repeats that matched one proposal, newest first."""
        rows = await c.fetch(
            "select d.run_id, d.name, d.detail, r.started_at as at from run_dropped d"
            " join synthesis_runs r on r.id = d.run_id"
            " where d.kind = 'suppressed' and d.matched = ? order by d.id desc limit ?",
            proposal_id,
            c.dialect.limit(limit),
        )
        return [Repeat.model_validate(r) for r in rows]

    @query
    async def run_checks(self, c: Conn, run_id: int) -> list[RunCheck]:
        """One run's same-claim checks, in the order it made them."""
        rows = await c.fetch(
            "select name, decision, compared, reason, matched, matched_skill"
            " from same_claim_checks where run_id = ? order by id",
            run_id,
        )
        return [RunCheck.model_validate({**r, "compared": json.loads(r["compared"])}) for r in rows]

    @query
    async def get_run(self, c: Conn, run_id: int) -> RunRecord | None:
        """One run record, or None."""
        row = await c.fetchrow("select * from synthesis_runs where id = ?", run_id)
        return None if row is None else RunRecord.model_validate(row)

    @query
    async def run_dropped(self, c: Conn, run_id: int) -> list[RunDropped]:
        """What one run suppressed and refused, in the order it decided."""
        rows = await c.fetch(
            "select kind, name, reason, matched, matched_skill, detail from run_dropped"
            " where run_id = ? order by id",
            run_id,
        )
        return [RunDropped.model_validate(r) for r in rows]

    @query
    async def list_runs(self, c: Conn, limit: int = 20) -> list[RunRecord]:
        """Recent runs, newest first."""
        rows = await c.fetch(
            "select * from synthesis_runs order by id desc limit ?", c.dialect.limit(limit)
        )
        return [RunRecord.model_validate(r) for r in rows]

    @query
    async def acquire_lock(self, c: Conn, name: str, holder: str, now: float, lease: float) -> bool:
        """Take (or renew) a named lease; False while another holder's lease runs."""
        # One statement: a concurrent taker waits for the row, then sees the winner's lease.
        taken = await c.execute(
            "insert into locks (name, holder, expires_at) values (?, ?, ?)"
            " on conflict (name) do update set holder = excluded.holder,"
            " expires_at = excluded.expires_at"
            " where locks.holder = excluded.holder or locks.expires_at < ?",
            name,
            holder,
            now + lease,
            now,
        )
        return taken == 1

    @query
    async def release_lock(self, c: Conn, name: str, holder: str) -> None:
        """Give a lease back, if it is still ours."""
        await c.execute("delete from locks where name = ? and holder = ?", name, holder)

    @query
    async def fail_interrupted_runs(self, c: Conn, now: float, error: str) -> int:
        """Mark runs still `running` as failed: called by the lock's holder, so none is live."""
        return int(
            await c.execute(
                "update synthesis_runs set status = 'failed', error = ?, finished_at = ?"
                " where status = 'running'",
                error,
                now,
            )
        )

    @query
    async def lock_holder(self, c: Conn, name: str, now: float) -> str | None:
        """Who holds an unexpired lease, if anyone."""
        holder = await c.fetchval(
            "select holder from locks where name = ? and expires_at >= ?", name, now
        )
        return None if holder is None else str(holder)

    @query
    async def calibration(self, c: Conn, model: str, kind: str) -> Calibration | None:
        """A model's last calibration on one kind of question, if it has one."""
        row = await c.fetchrow(
            "select * from judge_calibrations where model = ? and kind = ?", model, kind
        )
        return None if row is None else Calibration.model_validate(row)

    @query
    async def calibrations(self, c: Conn) -> list[Calibration]:
        """Every model's last calibration, newest first."""
        rows = await c.fetch("select * from judge_calibrations order by at desc")
        return [Calibration.model_validate(r) for r in rows]

    @query
    async def record_calibration(self, c: Conn, result: Calibration) -> None:
        """Keep a calibration, replacing the model's last one on that kind (whether the
        admins were told is kept: they are told once per model and kind)."""
        await c.execute(
            "insert into judge_calibrations"
            " (model, kind, total, correct, yes, unanswered, pairs_hash, at, onboard)"
            " values (?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " on conflict (model, kind) do update set total = excluded.total,"
            " correct = excluded.correct, yes = excluded.yes,"
            " unanswered = excluded.unanswered, pairs_hash = excluded.pairs_hash,"
            " at = excluded.at, onboard = excluded.onboard",
            result.model,
            result.kind,
            result.total,
            result.correct,
            result.yes,
            result.unanswered,
            result.pairs_hash,
            result.at,
            int(result.onboard),
        )

    @query
    async def claim_calibration_notice(self, c: Conn, model: str, kind: str, at: float) -> bool:
        """True once per model and kind: the caller tells the admins it cannot judge."""
        claimed = await c.fetchval(
            "update judge_calibrations set told_at = ? where model = ? and kind = ?"
            " and told_at is null returning model",
            at,
            model,
            kind,
        )
        return claimed is not None
