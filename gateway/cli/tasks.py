"""`skillgate tasks list|add|cancel`: the scheduled tasks, for operators.

A task added here is picked up by the running server (any replica) within seconds; its
times are read and shown in the task's timezone (SKILLGATE_DEFAULT_TIMEZONE unless given).
On a platform with a monthly push quota (LINE), a task the month's pushes left would not
cover beside the channel's active tasks is refused (`gateway.core.push_quota`); a quota
that cannot be read does not stop it.
"""

from __future__ import annotations

import sys
import time
from datetime import datetime

from gateway.config import Settings
from gateway.core.push_quota import shortfall
from gateway.core.scheduled import NewTask, ScheduledTask
from gateway.core.task_times import BadSchedule, cron_for, next_due, too_often, trigger, zone
from gateway.store import store_for


def when(at: float | None, timezone: str) -> str:
    """Epoch seconds as the task's local time ("-" for none)."""
    if at is None:
        return "-"
    return f"{datetime.fromtimestamp(at, zone(timezone)):%Y-%m-%d %H:%M}"


def line(task: ScheduledTask) -> str:
    repeat = task.repeat if task.cron is None or task.repeat != "cron" else f"cron {task.cron}"
    last = f"{when(task.last_run_at, task.timezone)} {task.last_outcome or '-'}"
    return (
        f"#{task.id} {task.channel}:{task.chat_id} next {when(task.next_at, task.timezone)}"
        f" {task.timezone} ({repeat}) {task.status}, last run {last}: {task.text}"
    )


async def list_tasks(settings: Settings, finished: bool) -> int:
    """Print the tasks, next due first."""
    async with store_for(settings) as store:
        tasks = await store.tasks_list(finished=finished)
    for task in tasks:
        print(line(task))
    if not tasks:
        print("no scheduled tasks")
    return 0


def first_time(at: str | None, repeat: str, cron: str | None, tz: str, now: float) -> float:
    """The first due time: `at` (local, ISO 8601) or, for a cron task, its next match."""
    if at is not None:
        try:
            local = datetime.fromisoformat(at)
        except ValueError as exc:
            raise BadSchedule(
                f"--at {at!r} is not a date and time such as 2026-12-08T09:00"
            ) from exc
        if local.tzinfo is None:
            local = local.replace(tzinfo=zone(tz))
        if local.timestamp() <= now:
            raise BadSchedule(f"--at {at} is in the past ({tz})")
        return local.timestamp()
    if cron is None:
        raise BadSchedule("give --at, or --cron for a task that repeats on a cron expression")
    found = next_due(cron, tz, now)
    if found is None:
        raise BadSchedule(f"the cron expression {cron!r} never matches")
    return found


async def add_task(
    settings: Settings,
    channel: str,
    chat: str,
    text: str,
    *,
    at: str | None,
    every: str,
    cron: str | None,
    timezone: str | None,
) -> int:
    """Store a reminder for `chat`; prints its id and first time."""
    tz = timezone or settings.default_timezone
    try:
        zone(tz)
        if cron is not None:
            trigger(cron, zone(tz))  # a bad expression is refused now, not at its first run
            every = "cron"
        first = first_time(at, every, cron, tz, time.time())
        if cron is None:
            cron = cron_for(every, datetime.fromtimestamp(first, zone(tz)))
        if cron is not None and (why := too_often(cron, first, settings.task_min_repeat_minutes)):
            raise BadSchedule(why)
    except BadSchedule as exc:
        print(f"skillgate tasks add: {exc}", file=sys.stderr)
        return 2
    if not text.strip():
        print("skillgate tasks add: the reminder's text is empty", file=sys.stderr)
        return 2
    task = NewTask(
        channel=channel,
        chat_id=chat,
        user_id=None,
        kind="reminder",
        text=text.strip(),
        repeat=every,
        cron=cron,
        timezone=tz,
        next_at=first,
    )
    from gateway.channels.registry import push_quota  # builds the platform's adapter

    quota = await push_quota(settings, channel)
    async with store_for(settings) as store:
        short = await shortfall(
            task, quota, lambda end: store.tasks_due_before(channel, end), time.time()
        )
        if short is not None:
            print(f"skillgate tasks add: {short.said(channel)}", file=sys.stderr)
            return 1
        stored = await store.task_add(task)
    print(f"added {line(stored)}")
    return 0


async def cancel_task(settings: Settings, task_id: int) -> int:
    """Cancel one task; 1 when there is no unfinished task with that id."""
    async with store_for(settings) as store:
        cancelled = await store.task_cancel(task_id)
    if not cancelled:
        print(f"skillgate tasks cancel: no active or paused task #{task_id}", file=sys.stderr)
        return 1
    print(f"cancelled task #{task_id}")
    return 0
