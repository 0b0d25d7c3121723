"""The console's Tasks page: every task that will run, with its next run in its timezone,
its last run and outcome; pause, resume and cancel, each behind the form token."""

from __future__ import annotations

import time
from collections.abc import Callable

from gateway.config import Settings
from gateway.core.scheduled import NewTask
from gateway.runtime.keys import TASKS
from tests.console_support import sign_in
from tests.fakes.openai_server import FakeOpenAI
from tests.telegram_harness import telegram_gateway


def task(text: str, next_at: float, kind: str = "reminder") -> NewTask:
    return NewTask.model_validate(
        {
            "channel": "telegram",
            "chat_id": "42",
            "user_id": "42",
            "kind": kind,
            "text": text,
            "repeat": "daily",
            "cron": "0 8 * * *",
            "timezone": "Asia/Tokyo",
            "next_at": next_at,
        }
    )


async def test_tasks_are_listed_with_their_runs_and_paused_resumed_and_cancelled(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm) as gw:
        store = gw.parts.store
        now = time.time()
        ran = await store.task_add(task("stretch", now - 1))
        await gw.app[TASKS].tick()
        await gw.app[TASKS].wait_idle()  # its first run: sent, moved to tomorrow 08:00
        later = await store.task_add(task("the tea headlines", now + 3600, "agent"))
        csrf = await sign_in(gw.client)
        page = await (await gw.client.get("/admin/tasks")).text()
        assert "stretch" in page and "the tea headlines" in page
        assert '<a href="/admin/tasks" aria-current="page">Tasks</a>' in page
        stretched = await store.task_get(ran.id)
        assert stretched is not None and stretched.last_outcome == "sent"
        row = page.split(f'id="task-{ran.id}"', 1)[1].split("</tr>", 1)[0]
        assert "08:00 Asia/Tokyo" in row and "<td>sent</td>" in row and "<td>active</td>" in row

        async def act(action: str, task_id: int, token: str = csrf) -> int:
            form = {"csrf": token, "task": str(task_id), "action": action}
            return (await gw.client.post("/admin/tasks", data=form)).status

        assert await act("pause", later.id) == 200
        paused = await store.task_get(later.id)
        assert paused is not None and paused.status == "paused"
        assert await act("pause", later.id) == 409  # already paused: nothing changed
        assert await act("resume", later.id) == 200
        resumed = await store.task_get(later.id)
        assert resumed is not None and resumed.status == "active"
        assert await act("cancel", later.id) == 200
        assert "the tea headlines" not in await (await gw.client.get("/admin/tasks")).text()
        assert await act("explode", ran.id) == 400
        assert await act("pause", ran.id, token="forged") == 403
        kept = await store.task_get(ran.id)
        assert kept is not None and kept.status == "active"
