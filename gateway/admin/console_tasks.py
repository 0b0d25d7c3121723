"""The console's Tasks page: every active or paused scheduled task with its next run, last
run and outcome, each paused, resumed or cancelled here; and a new reminder on a crontab
expression, checked as `skillgate tasks add --cron` checks it (the timezone, the
expression, the shortest repeat allowed, the channel's monthly push quota)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo

from aiohttp import web

from gateway.admin.console import decider, page, refuse
from gateway.channels.registry import configured_platforms, push_quota
from gateway.core.push_quota import shortfall
from gateway.core.scheduled import NewTask, ScheduledTask
from gateway.core.task_times import BadSchedule, cron_first, zone
from gateway.runtime.keys import SETTINGS, STORE, TASKS

log = logging.getLogger(__name__)

ACTIONS = ("pause", "resume", "cancel")
TEXT_CHARS = 2000
"""The longest reminder text the form takes (as the `schedule` tool)."""
FIELD_CHARS = 128
"""The longest chat id, crontab expression or timezone name the form takes."""


@dataclass(frozen=True)
class TaskRow:
    """One task as the page shows it: its times in its own timezone."""

    task: ScheduledTask
    next_run: str
    last_run: str


def local(at: float | None, timezone: str) -> str:
    """A time in the task's timezone ("2026-12-08 08:00"), or "-"."""
    if at is None:
        return "-"
    tz: tzinfo
    try:
        tz = zone(timezone)
    except BadSchedule:  # a name the host's tz database no longer knows
        tz = UTC
    return f"{datetime.fromtimestamp(at, tz):%Y-%m-%d %H:%M}"


async def tasks_page(request: web.Request, *, done: str | None = None) -> web.Response:
    found = await request.config_dict[STORE].tasks_list()
    rows = [
        TaskRow(t, local(t.next_at, t.timezone), local(t.last_run_at, t.timezone)) for t in found
    ]
    settings = request.config_dict[SETTINGS]
    return await page(
        request,
        "tasks.html",
        active="tasks",
        rows=rows,
        done=done,
        channels=[p.name for p in configured_platforms(settings)],
        default_timezone=settings.default_timezone,
        min_repeat=settings.task_min_repeat_minutes,
    )


async def show(request: web.Request) -> web.Response:
    return await tasks_page(request)


async def change(request: web.Request) -> web.Response:
    """Pause, resume or cancel one task."""
    form = await request.post()
    raw, action = form.get("task"), form.get("action")
    if not isinstance(raw, str) or not raw.isdigit() or len(raw) > 18 or action not in ACTIONS:
        return await refuse(
            request, 400, "Not a task", "Choose a task and pause, resume or cancel."
        )
    task_id, store = int(raw), request.config_dict[STORE]
    if action == "cancel":
        changed = await store.task_cancel(task_id)
    else:
        changed = await store.task_set_paused(task_id, action == "pause")
    if not changed:
        why = f"Task {task_id} is not there to {action}: it may have finished or changed."
        return await refuse(request, 409, "Nothing changed", why)
    worker = request.config_dict.get(TASKS)
    if worker is not None and action == "resume":
        worker.wake()  # a task resumed past its time runs now
    log.info("console: %s chose to %s task %d", decider(request), action, task_id)
    done = {"pause": "paused", "resume": "resumed", "cancel": "cancelled"}[action]
    return await tasks_page(request, done=f"task {task_id} {done}")


def _field(form: Mapping[str, object], name: str, most: int) -> str | None:
    """A form's text field, stripped; None when missing or longer than `most`."""
    value = form.get(name)
    if not isinstance(value, str) or len(value) > most:
        return None
    return value.strip()


async def add(request: web.Request) -> web.Response:
    """A new reminder on a crontab expression: refused with why (400, or 409 when the
    month's pushes would run out), else stored and shown."""
    form = await request.post()
    settings = request.config_dict[SETTINGS]
    channel = _field(form, "channel", FIELD_CHARS)
    chat = _field(form, "chat", FIELD_CHARS)
    text = _field(form, "text", TEXT_CHARS)
    cron = _field(form, "cron", FIELD_CHARS)
    timezone = _field(form, "timezone", FIELD_CHARS) or settings.default_timezone
    channels = [p.name for p in configured_platforms(settings)]
    if channel not in channels or not chat or not text or not cron:
        why = (
            f"Give a channel ({', '.join(channels) or 'none is configured'}), a chat id, the"
            f" reminder's text (at most {TEXT_CHARS} characters) and a crontab expression."
        )
        return await refuse(request, 400, "Not a task", why)
    worker = request.config_dict.get(TASKS)
    now = time.time() if worker is None else worker.clock()  # the task worker's time
    try:
        least = settings.task_min_repeat_minutes
        first = await asyncio.to_thread(cron_first, cron, timezone, now, least)  # a year of times
    except BadSchedule as exc:
        return await refuse(request, 400, "Not a task", f"{str(exc)[:300]}.")
    task = NewTask(
        channel=channel,
        chat_id=chat,
        user_id=None,
        kind="reminder",
        text=text,
        repeat="cron",
        cron=cron,
        timezone=timezone,
        next_at=first,
    )
    store = request.config_dict[STORE]
    quota = await push_quota(settings, channel)
    short = await shortfall(task, quota, lambda end: store.tasks_due_before(channel, end), now)
    if short is not None:
        return await refuse(request, 409, "Not scheduled", f"{short.said(channel)}.")
    stored = await store.task_add(task, now=now)
    if worker is not None:
        worker.wake()
    log.info("console: %s added task %d", decider(request), stored.id)
    return await tasks_page(
        request, done=f"task {stored.id} added, first at {local(first, timezone)}"
    )


def add_routes(app: web.Application) -> None:
    app.router.add_get("/tasks", show)
    app.router.add_post("/tasks", change)
    app.router.add_post("/tasks/add", add)
