"""Due reminders through the real app, on Telegram and LINE: what start-up finds overdue runs
marked late or is reported missed (once, also after another restart), in the user's language
and timezone; a LINE push retried for the same occurrence arrives once (its retry key)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import datetime
from zoneinfo import ZoneInfo

from gateway.app import PARTS
from gateway.config import Settings
from gateway.conversation.reminders import ReminderDelivery
from gateway.core.scheduled import NewTask, Occurrence
from gateway.i18n import texts_for
from gateway.runtime.keys import TASKS
from gateway.store import open_store
from tests.fakes.line_api import unknown_event
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegramAPI
from tests.line_support import GROUP_ID, USER_ID, line_rig
from tests.telegram_harness import telegram_gateway

TOKYO = ZoneInfo("Asia/Tokyo")


def reminder(channel: str, chat_id: str, text: str, due: float) -> NewTask:
    return NewTask(
        channel=channel,
        chat_id=chat_id,
        user_id=chat_id,
        kind="reminder",
        text=text,
        timezone="Asia/Tokyo",
        next_at=due,
    )


async def seed(settings: Settings, *tasks: NewTask) -> list[int]:
    """Tasks stored while the gateway is down."""
    store = await open_store(settings)
    try:
        return [(await store.task_add(task)).id for task in tasks]
    finally:
        await store.close()


def shown(due: float) -> str:
    return f"{datetime.fromtimestamp(due, TOKYO):%Y-%m-%d %H:%M} Asia/Tokyo"


async def test_telegram_start_up_runs_a_late_reminder_and_reports_a_missed_one_once(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    now = time.time()
    late, missed = now - 10 * 60, now - 3 * 3600  # the default grace is an hour
    settings = make_settings()
    ids = await seed(
        settings,
        reminder("telegram", "42", "water the plants", late),
        reminder("telegram", "43", "call mum", missed),
    )
    async with FakeTelegramAPI() as fake:
        async with telegram_gateway(make_settings, fake_llm, fake=fake) as gw:
            sent = await gw.fake.wait_for("sendMessage", 2)
            texts = {str(c.params["chat_id"]): c.params["text"] for c in sent}
            assert texts == {
                "42": f"⏰ water the plants\n(late: the bot was offline at {shown(late)})",
                "43": f"⏰ Missed while the bot was offline ({shown(missed)}): call mum",
            }
            await gw.app[TASKS].wait_idle()
            store = gw.parts.store
            outcomes = [[r.outcome for r in await store.task_runs(i)] for i in ids]
            assert outcomes == [["late"], ["missed"]]
            metrics = await (await gw.client.get("/metrics")).text()
            assert 'skillgate_task_occurrences_total{outcome="late"} 1.0' in metrics
            assert 'skillgate_task_occurrences_total{outcome="missed"} 1.0' in metrics
        async with telegram_gateway(make_settings, fake_llm, fake=fake) as again:
            assert await again.app[TASKS].tick() == []  # nothing due: both were recorded
            assert len(fake.calls_of("sendMessage")) == 2


async def test_a_reminder_says_its_time_in_the_chats_language(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = make_settings()
    store = await open_store(settings)
    try:
        await store.choose_language("telegram", "42", "ja", "42")
    finally:
        await store.close()
    due = time.time() - 5 * 60
    await seed(settings, reminder("telegram", "42", "水やり", due))
    async with telegram_gateway(make_settings, fake_llm) as gw:
        (sent,) = await gw.fake.wait_for("sendMessage", 1)
        expected = texts_for("ja")(
            "⏰ {text}\n(late: the bot was offline at {time})", text="水やり", time=shown(due)
        )
        assert sent.params["text"] == expected
        assert "遅延" in expected


async def test_line_pushes_a_due_reminder_and_a_retried_push_arrives_once(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    due = time.time() - 1
    async with line_rig(make_settings, fake_llm) as rig:
        (task_id,) = [(await rig.store.task_add(reminder("line", USER_ID, "stretch", due))).id]
        await asyncio.gather(*await rig.http.app[TASKS].tick())
        assert rig.fake.delivered_texts(USER_ID) == ["⏰ stretch"]
        # The same occurrence again, as after a crash between the push and its record.
        task = await rig.store.task_get(task_id)
        assert task is not None
        occurrence = Occurrence(task=task, due_at=due, timing="on_time")
        transport = rig.channel.card_transport()
        assert transport is not None
        languages = rig.http.app[PARTS].languages

        async def fence() -> None:
            return None

        await ReminderDelivery({"line": transport}, languages)(occurrence, fence)
        assert rig.fake.delivered_texts(USER_ID) == ["⏰ stretch"]


async def test_telegram_a_chat_that_blocked_the_bot_pauses_its_task_at_once(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    due = time.time() - 1
    async with telegram_gateway(make_settings, fake_llm) as gw:
        gw.fake.fail_next("sendMessage", 403, "Forbidden: bot was blocked by the user")
        task = await gw.parts.store.task_add(reminder("telegram", "42", "stretch", due))
        worker = gw.app[TASKS]
        await worker.tick()
        await worker.wait_idle()
        paused = await gw.parts.store.task_get(task.id)
        assert paused is not None and paused.status == "paused"
        [run] = await gw.parts.store.task_runs(task.id)
        assert run.outcome == "failed" and "paused" in (run.detail or "")
        assert await worker.tick() == []  # not retried
        assert gw.fake.sent_texts(42) == []


async def test_line_unfollow_and_leave_pause_the_chats_tasks(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    later = time.time() + 3600
    async with line_rig(make_settings, fake_llm) as rig:
        mine = await rig.store.task_add(reminder("line", USER_ID, "stretch", later))
        group = await rig.store.task_add(
            reminder("line", GROUP_ID, "stand-up", later).model_copy(update={"user_id": USER_ID})
        )
        other = await rig.store.task_add(reminder("line", "U" + "3" * 32, "tea", later))
        await rig.deliver(unknown_event("unfollow"))
        await rig.deliver(unknown_event("leave", group_id=GROUP_ID))
        statuses = [(await rig.store.task_get(t.id)) for t in (mine, group, other)]
        assert [t.status if t else None for t in statuses] == ["paused", "paused", "active"]
