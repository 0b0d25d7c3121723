"""Scheduled tasks: durable rows, each due occurrence claimed and fenced like an inbox update.

A task is claimed by one replica at a time (holder, lease, claim number), only while it is
due; the delivery checks the claim before it sends (`task_fence`) and records its outcome
with the next due time in one transaction fenced by the same claim (`task_finish`). The
outcome row is unique per (task, due time): an occurrence is recorded once, whoever tries.
"""

from __future__ import annotations

import time

from gateway.core.scheduled import NewTask, ScheduledTask, TaskRun
from gateway.store.sql import Conn, QueriesBase, query, transaction, urgent

TASK = (
    "id, channel, chat_id, user_id, kind, text, repeat, cron, timezone, next_at, status,"
    " claimed_by, lease_until, claim, failures, created_at, last_run_at, last_outcome"
)


class ScheduleQueries(QueriesBase):
    """Tasks, their claims while due, and the outcome of each occurrence."""

    @query
    async def task_add(self, c: Conn, task: NewTask, now: float | None = None) -> ScheduledTask:
        """Store a new active task."""
        return await _insert(c, task, time.time() if now is None else now)

    @transaction
    async def task_add_held(
        self, c: Conn, task: NewTask, limit: int, now: float | None = None
    ) -> ScheduledTask | None:
        """Store a new active task for its user unless they hold `limit` active or paused
        tasks on its channel already (None then); replicas adding for one user queue."""
        await c.lock(f"tasks:{task.channel}:{task.user_id}")
        held = await c.fetchval(
            "select count(*) from scheduled_tasks where channel = ? and user_id = ?"
            " and status in ('active', 'paused')",
            task.channel,
            task.user_id,
        )
        if int(held or 0) >= limit:
            return None
        return await _insert(c, task, time.time() if now is None else now)

    @query
    async def task_claim(
        self, c: Conn, holder: str, lease: float, *, limit: int, now: float | None = None
    ) -> list[ScheduledTask]:
        """Claim up to `limit` due tasks for `holder` until now + `lease`, the most overdue first.

        As `inbox_claim`: PostgreSQL's `skip locked` lets replicas claim at the same moment,
        and a row claimed meanwhile is checked again on its new version (its lease runs),
        so no task is claimed twice; each claim counts up the row's claim number.
        """
        at = time.time() if now is None else now
        if limit <= 0:
            return []
        rows = await c.fetch(
            f"""
            with picked as materialized (
                select id from scheduled_tasks
                where status = 'active' and next_at <= ?
                  and (lease_until is null or lease_until < ?)
                order by next_at, id
                limit ?
                {c.dialect.skip_locked}
            )
            update scheduled_tasks set claimed_by = ?, lease_until = ?, claim = claim + 1
            where id in (select id from picked)
            and status = 'active' and next_at <= ?
            and (lease_until is null or lease_until < ?)
            returning {TASK}
            """,
            at,
            at,
            limit,
            holder,
            at + lease,
            at,
            at,
        )
        tasks = [ScheduledTask.model_validate(r) for r in rows]
        return sorted(tasks, key=lambda t: (t.next_at or 0.0, t.id))

    @query  # as `inbox_fence`: a fence that waits delays a send; it never lets a wrong one out
    async def task_fence(
        self,
        c: Conn,
        holder: str,
        task_id: int,
        claim: int,
        lease: float,
        now: float | None = None,
    ) -> bool:
        """Before a send: True while `holder` holds claim `claim` (the lease is extended)."""
        at = time.time() if now is None else now
        kept = await c.execute(
            "update scheduled_tasks set lease_until = ?"
            " where id = ? and claimed_by = ? and claim = ? and status = 'active'",
            at + lease,
            task_id,
            holder,
            claim,
        )
        return kept == 1

    @urgent
    async def task_renew(
        self,
        c: Conn,
        holder: str,
        claims: list[tuple[int, int]],
        lease: float,
        now: float | None = None,
    ) -> list[int]:
        """Extend `holder`'s leases on (task id, claim number) pairs; returns the ids kept."""
        at = time.time() if now is None else now
        if not claims:
            return []
        which = " or ".join("(id = ? and claim = ?)" for _ in claims)
        rows = await c.fetch(
            f"update scheduled_tasks set lease_until = ? where claimed_by = ? and ({which})"
            " returning id",
            at + lease,
            holder,
            *(value for pair in claims for value in pair),
        )
        return sorted(int(r["id"]) for r in rows)

    @transaction
    async def task_finish(
        self,
        c: Conn,
        task: ScheduledTask,
        run: TaskRun,
        next_at: float | None,
        *,
        pause: bool = False,
    ) -> bool:
        """Record an occurrence's outcome and move the task to `next_at` (None: done), or
        `pause` it there (its chat cannot be written to).

        Only while the claim `task` was worked under holds; False (nothing written) when
        another replica took the task over, or the task was cancelled meanwhile.
        """
        moved = await c.execute(
            "update scheduled_tasks set next_at = ?, status = ?, claimed_by = null,"
            " lease_until = null, failures = 0, last_run_at = ?, last_outcome = ?"
            " where id = ? and claim = ? and claimed_by = ? and status = 'active'",
            next_at,
            "paused" if pause else "active" if next_at is not None else "done",
            run.ran_at,
            run.outcome,
            task.id,
            task.claim,
            task.claimed_by,
        )
        if moved != 1:
            return False
        await c.execute(
            "insert into task_runs (task_id, due_at, outcome, ran_at, holder, detail)"
            " values (?, ?, ?, ?, ?, ?) on conflict (task_id, due_at) do nothing",
            run.task_id,
            run.due_at,
            run.outcome,
            run.ran_at,
            run.holder,
            run.detail,
        )
        return True

    @query
    async def task_set_paused(self, c: Conn, task_id: int, paused: bool) -> bool:
        """Pause an active task, or resume a paused one (an operator's choice); False when it
        was in neither state. Resumed past its time, it runs late or is reported missed."""
        before, after = ("active", "paused") if paused else ("paused", "active")
        changed = await c.execute(
            "update scheduled_tasks set status = ?, claimed_by = null, lease_until = null"
            " where id = ? and status = ?",
            after,
            task_id,
            before,
        )
        return changed == 1

    @query
    async def tasks_pause_chat(self, c: Conn, channel: str, chat_id: str) -> int:
        """Pause every active task of a chat the bot can no longer write to (blocked, left)."""
        return await c.execute(
            "update scheduled_tasks set status = 'paused'"
            " where channel = ? and chat_id = ? and status = 'active'",
            channel,
            chat_id,
        )

    @query
    async def task_retry_later(self, c: Conn, task: ScheduledTask, at: float) -> bool:
        """A delivery that failed: count the failure and give the claim back until `at`;
        False when the claim was gone already."""
        moved = await c.execute(
            "update scheduled_tasks set claimed_by = null, lease_until = ?,"
            " failures = failures + 1"
            " where id = ? and claim = ? and claimed_by = ? and status = 'active'",
            at,
            task.id,
            task.claim,
            task.claimed_by,
        )
        return moved == 1

    @query
    async def task_release(self, c: Conn, holder: str) -> int:
        """Give back every claim of `holder` (a clean stop), for others to take at once."""
        return await c.execute(
            "update scheduled_tasks set claimed_by = null, lease_until = null"
            " where claimed_by = ? and status = 'active'",
            holder,
        )

    @query
    async def task_get(self, c: Conn, task_id: int) -> ScheduledTask | None:
        """One task by id."""
        row = await c.fetchrow(f"select {TASK} from scheduled_tasks where id = ?", task_id)
        return None if row is None else ScheduledTask.model_validate(row)

    @query
    async def task_runs(self, c: Conn, task_id: int) -> list[TaskRun]:
        """The recorded occurrences of a task, oldest first."""
        rows = await c.fetch(
            "select task_id, due_at, outcome, ran_at, holder, detail from task_runs"
            " where task_id = ? order by due_at",
            task_id,
        )
        return [TaskRun.model_validate(r) for r in rows]

    @query
    async def tasks_list(self, c: Conn, *, finished: bool = False) -> list[ScheduledTask]:
        """Tasks by next due time: the active and paused ones, and with `finished` the rest."""
        which = "" if finished else " where status in ('active', 'paused')"
        rows = await c.fetch(
            f"select {TASK} from scheduled_tasks{which} order by coalesce(next_at, 0), id"
        )
        return [ScheduledTask.model_validate(r) for r in rows]

    @query
    async def tasks_due_before(self, c: Conn, channel: str, before: float) -> list[ScheduledTask]:
        """The channel's active tasks next due before `before` (what they need of a month)."""
        rows = await c.fetch(
            f"select {TASK} from scheduled_tasks where channel = ? and status = 'active'"
            " and next_at < ? order by next_at, id",
            channel,
            before,
        )
        return [ScheduledTask.model_validate(r) for r in rows]

    @query
    async def task_cancel(self, c: Conn, task_id: int) -> bool:
        """Cancel a task that has not finished; False when there is none such.

        An occurrence being delivered now finds the task cancelled when it records its outcome
        (`task_finish`), so nothing after it is delivered.
        """
        cancelled = await c.execute(
            "update scheduled_tasks set status = 'cancelled', next_at = null, claimed_by = null,"
            " lease_until = null where id = ? and status in ('active', 'paused')",
            task_id,
        )
        return cancelled == 1

    @query
    async def tasks_of(
        self, c: Conn, channel: str, chat_id: str, user_id: str
    ) -> list[ScheduledTask]:
        """The active and paused tasks a user created in a chat, next due first."""
        rows = await c.fetch(
            f"select {TASK} from scheduled_tasks where channel = ? and chat_id = ?"
            " and user_id = ? and status in ('active', 'paused')"
            " order by coalesce(next_at, 0), id",
            channel,
            chat_id,
            user_id,
        )
        return [ScheduledTask.model_validate(r) for r in rows]

    @query
    async def task_cancel_own(
        self, c: Conn, task_id: int, channel: str, user_id: str
    ) -> str | None:
        """Cancel the task only when that user created it and it has not finished; its text,
        or None when there is no such task."""
        row = await c.fetchrow(
            "update scheduled_tasks set status = 'cancelled', next_at = null, claimed_by = null,"
            " lease_until = null where id = ? and channel = ? and user_id = ?"
            " and status in ('active', 'paused') returning text",
            task_id,
            channel,
            user_id,
        )
        return None if row is None else str(row["text"])

    @query
    async def user_timezone(self, c: Conn, channel: str, user_id: str) -> str | None:
        """The timezone the user chose with /timezone (None: the default)."""
        row = await c.fetchrow(
            "select timezone from user_timezones where channel = ? and user_id = ?",
            channel,
            user_id,
        )
        return None if row is None else str(row["timezone"])

    @query
    async def set_user_timezone(
        self, c: Conn, channel: str, user_id: str, timezone: str, now: float | None = None
    ) -> None:
        """Keep the user's timezone (an IANA name, checked by the caller)."""
        await c.execute(
            "insert into user_timezones (channel, user_id, timezone, set_at) values (?, ?, ?, ?)"
            " on conflict (channel, user_id) do update set"
            " timezone = excluded.timezone, set_at = excluded.set_at",
            channel,
            user_id,
            timezone,
            time.time() if now is None else now,
        )


async def _insert(c: Conn, task: NewTask, at: float) -> ScheduledTask:
    row = await c.fetchrow(
        "insert into scheduled_tasks (channel, chat_id, user_id, kind, text, repeat, cron,"
        " timezone, next_at, created_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        f" returning {TASK}",
        task.channel,
        task.chat_id,
        task.user_id,
        task.kind,
        task.text,
        task.repeat,
        task.cron,
        task.timezone,
        task.next_at,
        at,
    )
    assert row is not None
    return ScheduledTask.model_validate(row)
