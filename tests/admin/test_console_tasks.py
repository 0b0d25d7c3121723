"""The console's Tasks page: every task that will run, with its next run in its timezone,
its last run and outcome; pause, resume and cancel, each behind the form token."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from zoneinfo import ZoneInfo

from gateway.app import PARTS
from gateway.config import Settings
from gateway.core.scheduled import NewTask
from gateway.runtime.keys import TASKS
from tests.console_support import sign_in
from tests.fakes.line_api import QUOTA_PATH, USER_ID
from tests.fakes.openai_server import FakeOpenAI
from tests.line_support import line_rig
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


async def test_a_reminder_on_a_cron_expression_is_added_from_the_console_and_checked(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    monday = datetime(2026, 12, 7, 14, 30, tzinfo=ZoneInfo("Asia/Tokyo")).timestamp()
    async with telegram_gateway(make_settings, fake_llm, clock=lambda: monday) as gw:
        store = gw.parts.store
        csrf = await sign_in(gw.client)
        page = await (await gw.client.get("/admin/tasks")).text()
        assert 'action="/admin/tasks/add"' in page and '<option value="telegram">' in page

        async def add(**fields: str) -> tuple[int, str]:
            form = {"csrf": csrf, "channel": "telegram", "chat": "42", "text": "stand-up"}
            response = await gw.client.post("/admin/tasks/add", data={**form, **fields})
            return response.status, await response.text()

        status, page = await add(cron="0 8 * * 1-5", timezone="Asia/Tokyo")
        assert status == 200 and "task 1 added, first at 2026-12-08 08:00" in page
        [task] = await store.tasks_list()
        assert (task.repeat, task.cron, task.timezone, task.user_id) == (
            "cron",
            "0 8 * * 1-5",
            "Asia/Tokyo",
            None,
        )
        assert (
            task.next_at == datetime(2026, 12, 8, 8, 0, tzinfo=ZoneInfo("Asia/Tokyo")).timestamp()
        )

        for fields, status_code, why in (
            ({"cron": "*/5 * * * *"}, 400, "repeats after 5 minutes at times"),
            ({"cron": "0 8 * *"}, 400, "5 fields"),
            ({"cron": "0 8 * * 1", "timezone": "Mars/Olympus"}, 400, "unknown timezone"),
            ({"cron": "0 8 * * 1", "channel": "line"}, 400, "Give a channel (telegram)"),
            ({"cron": "0 8 * * 1", "text": " "}, 400, "the reminder&#39;s text"),
            ({"cron": "0 8 * * 1", "csrf": "forged"}, 403, "security token"),
        ):
            status, page = await add(**fields)
            assert status == status_code and why in page, (fields, page)
        assert len(await store.tasks_list()) == 1  # nothing stored by a refusal


async def test_a_console_task_on_line_past_the_months_push_quota_is_refused(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    monday = datetime(2026, 12, 7, 14, 30, tzinfo=ZoneInfo("Asia/Tokyo")).timestamp()
    async with line_rig(make_settings, fake_llm, clock=lambda: monday) as rig:
        csrf = await sign_in(rig.http)
        rig.fake.quota_limit = 10  # a daily task needs the 24 08:00s left in December
        form = {"csrf": csrf, "channel": "line", "chat": USER_ID, "text": "x", "cron": "0 8 * * *"}
        response = await rig.http.post("/admin/tasks/add", data=form)
        assert response.status == 409
        assert "line&#39;s push quota for this month would run out: 10 pushes are left" in (
            await response.text()
        )
        assert await rig.http.app[PARTS].store.tasks_list() == []
        rig.fake.quota_limit = 1000
        rig.fake.fail_next(QUOTA_PATH, 500, "Internal server error")  # unread after a minute
        response = await rig.http.post("/admin/tasks/add", data=form)
        assert response.status == 200 and "task 1 added" in await response.text()
