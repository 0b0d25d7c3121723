"""/timezone, /remind and /tasks in chat, on Telegram and LINE, on a clock the test holds:
the timezone is kept per user and used for their new tasks, each documented form of
`when` gives the right next time, /tasks lists with signed Cancel buttons, and a press
cancels only the presser's own task (a forged or foreign press changes nothing)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from gateway.config import Settings
from gateway.conversation.tasks import USAGE, BadWhen, plan
from gateway.core.task_times import next_due
from tests.channels.drivers import DRIVERS, GROUP, Driver, running
from tests.fakes.openai_server import FakeOpenAI
from tests.line_support import GROUP_ID

TOKYO = ZoneInfo("Asia/Tokyo")
NOW = datetime(2026, 12, 7, 14, 30, tzinfo=TOKYO).timestamp()
"""A Monday, 14:30 in Tokyo."""


def at(text: str, tz: ZoneInfo = TOKYO) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=tz).timestamp()


@pytest.mark.parametrize(
    ("asked", "repeat", "due"),
    [
        ("in 10m tea", "once", NOW + 600),
        ("in 2h tea", "once", NOW + 7200),
        ("in 3d tea", "once", NOW + 3 * 86400),
        ("at 09:00 tea", "once", at("2026-12-08 09:00")),  # passed today: tomorrow
        ("at 15:00 tea", "once", at("2026-12-07 15:00")),
        ("15:00 tea", "once", at("2026-12-07 15:00")),
        ("tomorrow 09:00 tea", "once", at("2026-12-08 09:00")),
        ("2026-12-24 18:00 tea", "once", at("2026-12-24 18:00")),
        ("daily 08:00 tea", "daily", at("2026-12-08 08:00")),
        ("weekdays 2026-12-12 08:00 tea", "weekdays", at("2026-12-14 08:00")),  # Sat: Monday
        ("weekly tomorrow 07:30 tea", "weekly", at("2026-12-08 07:30")),
        ("monthly 2026-12-31 09:00 tea", "monthly", at("2026-12-31 09:00")),
    ],
)
def test_each_documented_form_gives_its_next_time_in_the_users_zone(
    asked: str, repeat: str, due: float
) -> None:
    planned = plan(asked, "Asia/Tokyo", NOW)
    assert (planned.next_at, planned.repeat, planned.text) == (due, repeat, "tea")


def test_weekly_and_weekdays_repeat_on_the_right_days() -> None:
    assert plan("weekly tomorrow 07:30 x", "Asia/Tokyo", NOW).cron == "30 7 * * 2"
    assert plan("weekdays 08:00 x", "Asia/Tokyo", NOW).cron == "0 8 * * 1-5"
    monthly = plan("monthly 2026-12-31 09:00 x", "Asia/Tokyo", NOW)
    assert monthly.cron == "0 9 31 * *"
    # A month without the day is skipped: after 31 December comes 31 January, then March.
    january = next_due(monthly.cron, "Asia/Tokyo", monthly.next_at)
    assert january == at("2027-01-31 09:00")
    assert next_due(monthly.cron, "Asia/Tokyo", january) == at("2027-03-31 09:00")


def test_a_wall_time_that_does_not_exist_runs_an_hour_later_by_the_clock() -> None:
    york = ZoneInfo("America/New_York")
    before = datetime(2026, 3, 7, 12, 0, tzinfo=york).timestamp()
    planned = plan("tomorrow 02:30 x", "America/New_York", before)
    assert datetime.fromtimestamp(planned.next_at, york).strftime("%H:%M") == "03:30"


@pytest.mark.parametrize(
    "asked", ["", "tea", "in 10 tea", "at 25:00 tea", "2026-02-30 10:00 tea", "daily in 1h x"]
)
def test_what_is_not_a_documented_form_is_refused_with_the_usage(asked: str) -> None:
    with pytest.raises(BadWhen) as refused:
        plan(asked, "Asia/Tokyo", NOW)
    assert refused.value.template == USAGE


def test_a_time_already_past_is_refused() -> None:
    with pytest.raises(BadWhen) as refused:
        plan("2026-12-01 10:00 tea", "Asia/Tokyo", NOW)
    assert refused.value.template != USAGE


def lines(text: str) -> list[str]:
    """A message's lines (LINE's text with buttons may set the heading apart)."""
    return [line for line in text.splitlines() if line.strip()]


@pytest.fixture(params=DRIVERS)
async def chat(
    request: pytest.FixtureRequest, make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> AsyncIterator[Driver]:
    async with running(
        request.param, make_settings, fake_llm, clock=lambda: NOW, default_timezone="UTC"
    ) as driver:
        yield driver


async def test_timezone_is_kept_per_user_and_used_for_their_new_reminders(chat: Driver) -> None:
    await chat.say("/timezone")
    assert chat.texts()[-1].startswith("Your timezone is UTC.")
    await chat.say("/timezone Mars/Olympus")
    assert chat.texts()[-1].startswith("I don't know the timezone Mars/Olympus.")
    await chat.say("/timezone Asia/Tokyo")
    assert chat.texts()[-1] == "Your timezone is now Asia/Tokyo."
    await chat.say("/timezone")
    assert chat.texts()[-1].startswith("Your timezone is Asia/Tokyo.")
    await chat.say("/remind tomorrow 09:00 water the plants")
    assert chat.texts()[-1] == (
        "⏰ I'll remind you at 2026-12-08 09:00 Asia/Tokyo: water the plants"
    )
    await chat.say("/remind daily 08:00 stretch", user=chat.other)  # the default: UTC
    assert lines(chat.texts(chat.other)[-1]) == [
        "⏰ I'll remind you every day, first at 2026-12-07 08:00 UTC: stretch",  # 05:30 UTC now
        "Times are in UTC. If you live in another timezone, send /timezone with its name, for"
        " example /timezone Asia/Tokyo.",
    ]
    await chat.say("/remind in 1h tea", user=chat.other)  # asked once: the default is theirs now
    assert lines(chat.texts(chat.other)[-1]) == ["⏰ I'll remind you at 2026-12-07 06:30 UTC: tea"]
    mine = await chat.parts.store.tasks_of(chat.name, chat.user, chat.user)
    assert [(t.text, t.timezone, t.next_at) for t in mine] == [
        ("water the plants", "Asia/Tokyo", at("2026-12-08 09:00"))
    ]
    theirs = await chat.parts.store.tasks_of(chat.name, chat.other, chat.other)
    assert [(t.repeat, t.cron, t.timezone) for t in theirs] == [
        ("once", None, "UTC"),
        ("daily", "0 8 * * *", "UTC"),
    ]
    await chat.say("/remind someday tea")
    assert chat.texts()[-1].startswith("Tell me when and what, for example:")
    assert len(await chat.parts.store.tasks_of(chat.name, chat.user, chat.user)) == 1


async def test_tasks_lists_with_cancel_buttons_that_cancel_only_the_pressers_own(
    chat: Driver,
) -> None:
    await chat.say("/tasks")
    assert chat.texts()[-1] == "You have no reminders here. Set one with /remind."
    await chat.say("/timezone Asia/Tokyo")
    await chat.say("/remind 2026-12-24 18:00 dinner")
    await chat.say("/remind in 10m tea")
    await chat.say("/tasks")
    assert lines(chat.texts()[-1]) == [
        "Your reminders (press one to cancel it):",
        "1. 2026-12-07 14:40 Asia/Tokyo: tea",
        "2. 2026-12-24 18:00 Asia/Tokyo: dinner",
    ]
    tea, dinner = chat.rating_data()
    assert tea.startswith("tk:") and dinner.startswith("tk:")

    await chat.say("/remind in 1h theirs", user=chat.other)
    await chat.say("/tasks", user=chat.other)
    await chat.press(tea, user=chat.other)  # another user's valid button: not theirs
    assert not [t for t in chat.texts(chat.other) if t.startswith("Cancelled")]
    await chat.press(tea[:-2] + "xx")  # forged
    assert len(await chat.parts.store.tasks_of(chat.name, chat.user, chat.user)) == 2

    await chat.press(tea)
    assert chat.texts()[-1] == "Cancelled: tea"
    left = await chat.parts.store.tasks_of(chat.name, chat.user, chat.user)
    assert [t.text for t in left] == ["dinner"]
    await chat.press(tea)  # again: already cancelled
    assert [t for t in chat.texts() if t.startswith("Cancelled")] == ["Cancelled: tea"]
    assert [t.text for t in await chat.parts.store.tasks_of(chat.name, chat.user, chat.user)] == [
        "dinner"
    ]


async def test_a_user_past_the_most_tasks_is_refused_and_nothing_is_stored(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with running(
        "telegram", make_settings, fake_llm, clock=lambda: NOW, user_max_tasks=2
    ) as chat:
        await chat.say("/timezone Asia/Tokyo")
        await chat.say("/remind in 10m one")
        await chat.say("/remind in 20m two")
        await chat.say("/remind in 30m three")
        assert chat.texts()[-1] == (
            "You already have 2 reminders and tasks, the most one person may have here."
            " Cancel one with /tasks first."
        )
        held = await chat.parts.store.tasks_of(chat.name, chat.user, chat.user)
        assert [t.text for t in held] == ["one", "two"]
        await chat.say("/remind in 30m three", user=chat.other)  # another user's own count
        assert chat.texts(chat.other)[-1].startswith("⏰ I'll remind you at")
        await chat.say("/tasks")
        await chat.press(chat.rating_data()[0])  # one cancelled: room for another
        await chat.say("/remind in 30m three")
        assert chat.texts()[-1] == "⏰ I'll remind you at 2026-12-07 15:00 Asia/Tokyo: three"


ADMINS = {"telegram": "telegram_admin_ids", "line": "line_admin_ids"}
GROUPS = {"telegram": str(GROUP), "line": GROUP_ID}


@pytest.mark.parametrize("name", DRIVERS)
async def test_in_a_group_only_whom_the_rule_allows_sets_a_reminder(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, name: str
) -> None:
    other = {"telegram": "1002", "line": "U" + "2" * 32}[name]
    admin = {ADMINS[name]: [int(other) if name == "telegram" else other]}
    async with running(
        name, make_settings, fake_llm, clock=lambda: NOW, group_tasks="admins", **admin
    ) as chat:
        await chat.say("/remind in 10m tea", group=True, addressed=False)
        assert chat.texts(GROUPS[name])[-1] == (
            "In groups, only the bot's admins may set reminders and tasks."
        )
        await chat.say(
            "/remind in 10m tea", user=chat.other, group=True, addressed=False
        )  # an admin
        assert chat.texts(GROUPS[name])[-1].startswith("⏰ I'll remind you at")
        await chat.say("/remind in 10m tea")  # their own chat: no group rule
        assert chat.texts()[-1].startswith("⏰ I'll remind you at")
    # The same data, the same clock: the tasks set above are not due yet.
    async with running(
        name, make_settings, fake_llm, clock=lambda: NOW, group_tasks="off", **admin
    ) as chat:
        await chat.say("/remind in 10m tea", user=chat.other, group=True, addressed=False)
        assert chat.texts(GROUPS[name])[-1] == "Reminders and tasks are not set in groups here."


async def test_a_repeat_sooner_than_the_shortest_allowed_is_refused_and_nothing_is_stored(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with running(
        "line", make_settings, fake_llm, clock=lambda: NOW, task_min_repeat_minutes=10080
    ) as chat:
        await chat.say("/timezone Asia/Tokyo")
        for asked in ("daily 08:00 stretch", "weekdays 08:00 stretch", "毎日 8:00 体操"):
            await chat.say(f"/remind {asked}")
            assert chat.texts()[-1] == (
                "This would repeat too often: here a reminder or task repeats at most once"
                " every 10080 minutes."
            )
        assert await chat.parts.store.tasks_of(chat.name, chat.user, chat.user) == []
        await chat.say("/remind weekly tomorrow 08:00 stretch")  # a week apart: allowed
        await chat.say("/remind in 10m tea")  # once: no repeat to bound
        held = await chat.parts.store.tasks_of(chat.name, chat.user, chat.user)
        assert sorted(t.repeat for t in held) == ["once", "weekly"]
        await chat.say("/language ja")
        await chat.say("/remind 毎日 8:00 体操")
        assert chat.texts()[-1] == (
            "繰り返しの間隔が短すぎます。"
            "ここでは、リマインダーやタスクの繰り返しは 10080 分に1回までです。"
        )
