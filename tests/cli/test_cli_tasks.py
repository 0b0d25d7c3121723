"""`skillgate tasks add|list|cancel` as an operator runs them, in their timezone."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from gateway.store.sqlite import SqliteStore
from tests.fakes.line_api import QUOTA_PATH, USER_ID, FakeLineAPI
from tests.serve_process import skillgate


async def test_an_operator_adds_lists_and_cancels_a_weekday_reminder(tmp_path: Path) -> None:
    env = {"SKILLGATE_DATA_DIR": str(tmp_path), "SKILLGATE_DEFAULT_TIMEZONE": "Asia/Tokyo"}
    code, out, err = await skillgate(
        "tasks", "add", "telegram", "42", "stand-up", "--cron", "0 8 * * 1-5", env=env
    )
    assert code == 0, err
    assert out.startswith("added #1 telegram:42 next ") and "Asia/Tokyo (cron 0 8 * * 1-5)" in out
    async with SqliteStore(tmp_path / "skillgate.db") as store:
        task = await store.task_get(1)
    assert task is not None and task.next_at is not None
    local = datetime.fromtimestamp(task.next_at, ZoneInfo("Asia/Tokyo"))
    assert (local.hour, local.minute) == (8, 0) and local.isoweekday() <= 5  # Monday-Friday

    code, out, _ = await skillgate("tasks", "list", env=env)
    assert code == 0 and out.startswith("#1 telegram:42 next ") and "active" in out
    code, out, _ = await skillgate("tasks", "cancel", "1", env=env)
    assert code == 0 and out.strip() == "cancelled task #1"
    code, _, err = await skillgate("tasks", "cancel", "1", env=env)
    assert code == 1 and "no active or paused task #1" in err
    code, out, _ = await skillgate("tasks", "list", env=env)
    assert out.strip() == "no scheduled tasks"


async def test_a_bad_time_timezone_or_expression_is_refused_with_why(tmp_path: Path) -> None:
    env = {"SKILLGATE_DATA_DIR": str(tmp_path)}
    add = ("tasks", "add", "telegram", "42", "x")
    for extra, why in (
        (("--at", "tomorrow"), "is not a date and time"),
        (("--at", "2001-01-01T09:00"), "is in the past"),
        (("--at", "2099-01-01T09:00", "--timezone", "Mars/Olympus"), "unknown timezone"),
        (("--cron", "0 8 * *"), "5 fields"),
        (("--cron", "0 8 * * 9"), "a weekday is 0-7"),
        ((), "give --at"),
    ):
        code, _, err = await skillgate(*add, *extra, env=env)
        assert code == 2 and why in err, (extra, err)


async def test_a_line_task_past_the_months_push_quota_is_refused(tmp_path: Path) -> None:
    async with FakeLineAPI() as fake:
        env = {
            "SKILLGATE_DATA_DIR": str(tmp_path),
            "LINE_CHANNEL_SECRET": "test-line-channel-secret",
            "LINE_CHANNEL_ACCESS_TOKEN": fake.access_token,
            "LINE_API_BASE_URL": fake.base_url,
            "SKILLGATE_TASK_MIN_REPEAT_MINUTES": "1",
        }
        add = ("tasks", "add", "line", USER_ID, "stretch", "--cron", "* * * * *")
        fake.quota_limit = 0
        code, _, err = await skillgate(*add, env=env)
        assert code == 1 and "line's push quota for this month would run out: 0" in err, err
        fake.quota_limit = 1_000_000
        code, out, err = await skillgate(*add, env=env)
        assert code == 0 and out.startswith("added #1 line:"), err
        fake.quota_limit = 0
        fake.fail_next(QUOTA_PATH, 500, "Internal server error")
        code, out, err = await skillgate(*add, env=env)  # the quota unknown: allowed
        assert code == 0 and out.startswith("added #2 line:"), err


async def test_a_cron_expression_repeating_sooner_than_allowed_is_refused(tmp_path: Path) -> None:
    env = {"SKILLGATE_DATA_DIR": str(tmp_path)}  # the default: once an hour at most
    add = ("tasks", "add", "telegram", "42", "x", "--cron")
    for cron, gap in (("*/5 * * * *", "5 minutes"), ("0,30 8 * * *", "30 minutes")):
        code, _, err = await skillgate(*add, cron, env=env)
        assert code == 2 and f"repeats after {gap} at times" in err, err
        assert "shortest repeat allowed is 60 minutes (SKILLGATE_TASK_MIN_REPEAT_MINUTES)" in err
    async with SqliteStore(tmp_path / "skillgate.db") as store:
        assert await store.tasks_list() == []
    code, out, err = await skillgate(*add, "0 * * * *", env=env)  # hourly: allowed
    assert code == 0 and out.startswith("added #1 telegram:42"), err
    weekly = {**env, "SKILLGATE_TASK_MIN_REPEAT_MINUTES": "10080"}
    code, _, err = await skillgate(*add, "0 8 * * 1-5", env=weekly)
    assert code == 2 and "repeats after 1440 minutes at times" in err, err
    code, _, err = await skillgate(
        "tasks",
        "add",
        "telegram",
        "42",
        "x",
        "--every",
        "daily",
        "--at",
        "2099-01-01T09:00",
        env=weekly,
    )
    assert code == 2 and "repeats after 1440 minutes" in err, err
    code, out, err = await skillgate(*add, "0 8 * * 1", env=weekly)
    assert code == 0 and out.startswith("added #2 telegram:42"), err
