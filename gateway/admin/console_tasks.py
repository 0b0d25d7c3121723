"""The console's Tasks page: every active or paused scheduled task with its next run, last
run and outcome, each paused, resumed or cancelled here."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo

from aiohttp import web

from gateway.admin.console import decider, page, refuse
from gateway.core.scheduled import ScheduledTask
from gateway.core.task_times import BadSchedule, zone
from gateway.runtime.keys import STORE, TASKS

log = logging.getLogger(__name__)

ACTIONS = ("pause", "resume", "cancel")


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
    return await page(request, "tasks.html", active="tasks", rows=rows, done=done)


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


def add_routes(app: web.Application) -> None:
    app.router.add_get("/tasks", show)
    app.router.add_post("/tasks", change)
