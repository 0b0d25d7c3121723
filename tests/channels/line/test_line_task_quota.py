"""Scheduled tasks on LINE count against the channel's monthly push quota, through the real
app and the fake LINE API on a clock the test holds: a task the month's pushes left would
not cover (beside the active tasks') is refused with the reason and nothing is stored, one
that fits is set; past 90 % of the quota a task's delivery tells the admins, once a month;
a quota LINE cannot tell never blocks a task."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime
from zoneinfo import ZoneInfo

from gateway.config import Settings
from gateway.core.push_quota import month_end, month_last_day, pushes_this_month
from gateway.core.scheduled import NewTask
from gateway.runtime.keys import TASKS
from gateway.runtime.retention import purge_old
from tests.fakes.line_api import QUOTA_PATH, USER_ID, text_event
from tests.fakes.openai_server import FakeOpenAI
from tests.line_support import LineRig, line_rig

TOKYO = ZoneInfo("Asia/Tokyo")
NOW = datetime(2026, 12, 7, 14, 30, tzinfo=TOKYO).timestamp()
"""A Monday, 14:30 in Tokyo: 24 more 08:00s in December after today's."""
ADMIN_ID = "U" + "9" * 32
REFUSED = (
    "This can't be scheduled: the bot's messages for this month would run out. {left} are"
    " left, the tasks already set need {needed} and this one would need {more}. Cancel a"
    " task with /tasks, or set it for next month."
)


class Clock:
    def __init__(self, at: float) -> None:
        self.at = at

    def __call__(self) -> float:
        return self.at


async def say(rig: LineRig, text: str, user: str = USER_ID) -> str:
    await rig.deliver(text_event(text, user_id=user, reply_token=rig.token(user)))
    return rig.fake.delivered_texts(user)[-1]


def daily(text: str, first: float) -> NewTask:
    return NewTask(
        channel="line",
        chat_id=USER_ID,
        user_id=USER_ID,
        kind="reminder",
        text=text,
        repeat="daily",
        cron="0 8 * * *",
        timezone="Asia/Tokyo",
        next_at=first,
    )


def test_a_task_needs_its_occurrences_left_in_lines_month() -> None:
    first = datetime(2026, 12, 8, 8, 0, tzinfo=TOKYO).timestamp()
    assert pushes_this_month(daily("x", first), NOW) == 24
    once = daily("x", first).model_copy(update={"repeat": "once", "cron": None})
    assert pushes_this_month(once, NOW) == 1
    january = datetime(2027, 1, 1, 0, 0, tzinfo=TOKYO).timestamp()
    assert month_end(NOW) == january
    assert month_last_day(NOW) == "2026-12-31"
    assert pushes_this_month(daily("x", january), NOW) == 0  # next month's quota


async def test_a_task_the_months_pushes_would_not_cover_is_refused(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with line_rig(make_settings, fake_llm, clock=Clock(NOW)) as rig:
        rig.fake.quota_limit = 30
        await say(rig, "/timezone Asia/Tokyo")
        said = await say(rig, "/remind daily 08:00 stretch")
        assert said.startswith("⏰ I'll remind you every day, first at 2026-12-08 08:00")
        said = await say(rig, "/remind daily 09:00 tea")
        assert said == REFUSED.format(left=30, needed=24, more=24)
        said = await say(rig, "/remind in 10m tea")  # 24 + 1 fit in 30
        assert said == "⏰ I'll remind you at 2026-12-07 14:40 Asia/Tokyo: tea"
        held = await rig.store.tasks_of("line", USER_ID, USER_ID)
        assert sorted(t.text for t in held) == ["stretch", "tea"]
        # Another user's task counts against the same channel's quota.
        other = "U" + "2" * 32
        said = await say(rig, "/remind tomorrow 09:00 call", user=other)
        assert said.startswith("⏰ I'll remind you at")
        said = await say(rig, "/remind daily 07:00 yoga", user=other)
        assert said == REFUSED.format(left=30, needed=26, more=25)  # UTC: today too
        assert [t.text for t in await rig.store.tasks_of("line", other, other)] == ["call"]


async def test_a_quota_line_cannot_tell_never_blocks_a_task(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with line_rig(make_settings, fake_llm, clock=Clock(NOW)) as rig:
        rig.fake.quota_limit = 1
        rig.fake.fail_next(QUOTA_PATH, 500, "Internal server error", times=1)
        await say(rig, "/timezone Asia/Tokyo")
        said = await say(rig, "/remind daily 08:00 stretch")
        assert said.startswith("⏰ I'll remind you every day")
        assert len(rig.fake.calls_to(QUOTA_PATH)) == 1  # asked once, refused, allowed
        said = await say(rig, "/remind daily 09:00 tea")  # within the minute: not asked again
        assert said.startswith("⏰ I'll remind you every day")
        assert len(rig.fake.calls_to(QUOTA_PATH)) == 1


async def test_the_admins_are_told_once_a_month_when_the_quota_is_near_its_end(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    clock = Clock(NOW)
    async with line_rig(
        make_settings, fake_llm, clock=clock, line_admin_ids=ADMIN_ID, default_timezone="UTC"
    ) as rig:
        rig.fake.quota_limit = 20
        worker = rig.http.app[TASKS]
        once = daily("ping", NOW - 1).model_copy(update={"repeat": "once", "cron": None})
        for _ in range(17):
            await rig.store.task_add(once)
        await asyncio.gather(*await worker.tick())
        await worker.wait_idle()
        assert rig.fake.delivered_texts(ADMIN_ID) == []  # 17 of 20: not yet 90 %
        clock.at += 120  # the cached quota is read again
        await rig.store.task_add(once)
        await asyncio.gather(*await worker.tick())
        await worker.wait_idle()
        notice = (
            "⚠️ LINE has used 18 of its 20 push messages this month (90%). When none are"
            " left, reminders and scheduled answers are not delivered until the month ends,"
            " and new tasks that would not fit are refused."
        )
        assert rig.fake.delivered_texts(ADMIN_ID) == [notice]
        clock.at += 120
        await rig.store.task_add(once)
        await asyncio.gather(*await worker.tick())
        await worker.wait_idle()
        assert rig.fake.delivered_texts(ADMIN_ID) == [notice]  # once this month
        await purge_old(rig.store, days=7, now=NOW)  # retention keeps the month's flag
        clock.at += 120
        await rig.store.task_add(once)
        await asyncio.gather(*await worker.tick())
        await worker.wait_idle()
        assert rig.fake.delivered_texts(ADMIN_ID) == [notice]
        clock.at = datetime(2027, 1, 1, 0, 5, tzinfo=TOKYO).timestamp()  # LINE's next month
        rig.fake.quota_limit = 22  # the fake counts on: 22 of 22 used
        await rig.store.task_add(once.model_copy(update={"next_at": clock.at - 1}))
        await asyncio.gather(*await worker.tick())
        await worker.wait_idle()
        assert len(rig.fake.delivered_texts(ADMIN_ID)) == 2
        assert len(rig.fake.delivered_texts(USER_ID)) == 21
