"""Due times in the task's timezone: the day the clocks go forward or back fires once, crontab
weekdays mean what they mean in a crontab, and a bad rule says why."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from gateway.core.task_times import (
    BadSchedule,
    cron_for,
    next_due,
    shortest_gap,
    too_often,
    trigger,
    upcoming,
    zone,
)

NEW_YORK = ZoneInfo("America/New_York")


def local(times: list[float], tz: ZoneInfo = NEW_YORK) -> list[str]:
    return [f"{datetime.fromtimestamp(t, tz):%Y-%m-%d %H:%M %z}" for t in times]


def test_a_time_that_does_not_exist_the_day_clocks_go_forward_runs_once_an_hour_later() -> None:
    start = datetime(2026, 3, 7, 12, 0, tzinfo=NEW_YORK).timestamp()
    assert local(upcoming("30 2 * * *", "America/New_York", start, 3)) == [
        "2026-03-08 03:30 -0400",  # 02:30 does not exist that day
        "2026-03-09 02:30 -0400",
        "2026-03-10 02:30 -0400",
    ]


def test_a_time_that_occurs_twice_the_day_clocks_go_back_runs_once() -> None:
    start = datetime(2026, 10, 31, 12, 0, tzinfo=NEW_YORK).timestamp()
    assert local(upcoming("30 1 * * *", "America/New_York", start, 3)) == [
        "2026-11-01 01:30 -0400",  # the first 01:30; not again an hour later
        "2026-11-02 01:30 -0500",
        "2026-11-03 01:30 -0500",
    ]


def test_a_daily_task_keeps_its_wall_time_across_the_change() -> None:
    start = datetime(2026, 3, 7, 12, 0, tzinfo=NEW_YORK).timestamp()
    times = upcoming("0 9 * * *", "America/New_York", start, 2)
    assert local(times) == ["2026-03-08 09:00 -0400", "2026-03-09 09:00 -0400"]
    assert times[1] - times[0] == 86400  # after the change: a full day apart
    assert times[0] - start == 20 * 3600  # 12:00 EST to 09:00 EDT: 21 hours on the clock, 20 real


def test_crontab_weekdays_are_monday_to_friday_and_zero_and_seven_are_sunday() -> None:
    friday_noon = datetime(2026, 12, 4, 12, 0, tzinfo=NEW_YORK).timestamp()
    days = [
        datetime.fromtimestamp(t, NEW_YORK).strftime("%a")
        for t in upcoming("0 8 * * 1-5", "America/New_York", friday_noon, 5)
    ]
    assert days == ["Mon", "Tue", "Wed", "Thu", "Fri"]
    for sunday in ("0", "7"):
        (t,) = upcoming(f"0 8 * * {sunday}", "America/New_York", friday_noon, 1)
        assert datetime.fromtimestamp(t, NEW_YORK).strftime("%a") == "Sun"


def test_named_repeats_are_anchored_at_the_first_time() -> None:
    first = datetime(2026, 12, 9, 7, 45, tzinfo=ZoneInfo("Asia/Tokyo"))  # a Wednesday
    assert cron_for("once", first) is None
    assert cron_for("daily", first) == "45 7 * * *"
    assert cron_for("weekdays", first) == "45 7 * * 1-5"
    assert cron_for("weekly", first) == "45 7 * * 3"
    assert cron_for("monthly", first) == "45 7 9 * *"
    monthly = upcoming("45 7 31 * *", "Asia/Tokyo", first.timestamp(), 2)
    assert local(monthly, ZoneInfo("Asia/Tokyo")) == [
        "2026-12-31 07:45 +0900",
        "2027-01-31 07:45 +0900",  # months without a 31st are skipped
    ]


def test_a_time_after_the_last_due_time_is_strictly_later() -> None:
    due = datetime(2026, 12, 7, 9, 0, tzinfo=NEW_YORK).timestamp()
    assert next_due("0 9 * * *", "America/New_York", due) == due + 86400


@pytest.mark.parametrize(
    ("cron", "why"),
    [
        ("0 8 * *", "5 fields"),
        ("0 8 * * 8", "a weekday is 0-7"),
        ("61 8 * * *", "bad cron expression"),
    ],
)
def test_a_bad_rule_says_why(cron: str, why: str) -> None:
    with pytest.raises(BadSchedule, match=why):
        trigger(cron, NEW_YORK)


def test_an_unknown_timezone_says_what_is_expected() -> None:
    with pytest.raises(BadSchedule, match="IANA name"):
        zone("Mars/Olympus")
    with pytest.raises(BadSchedule, match="unknown repeat"):
        cron_for("fortnightly", datetime(2026, 1, 1, tzinfo=NEW_YORK))


MONDAY = datetime(2026, 12, 7, 0, 0, tzinfo=ZoneInfo("UTC")).timestamp()


@pytest.mark.parametrize(
    ("cron", "minutes"),
    [
        ("*/5 * * * *", 5),
        ("0 * * * *", 60),
        ("0,45 8 * * *", 45),  # 08:00 to 08:45; then 23 h 15 min to the next day's 08:00
        ("0 8 * * *", 1440),
        ("0 8 * * 1-5", 1440),  # Monday to Tuesday; Friday to Monday is longer
        ("0 8 * * 1", 10080),
        ("0 0 1,2 * *", 1440),
        ("0 9 31 * *", 31 * 1440),  # 31 January to 31 March is longer; December to January
        ("0 9 24 12 *", None),  # once a year: no second time within the year looked at
    ],
)
def test_the_shortest_gap_of_a_rule_over_the_coming_year(cron: str, minutes: int | None) -> None:
    gap = shortest_gap(cron, MONDAY)
    assert (None if gap is None else gap / 60) == minutes


def test_a_daily_rule_is_a_day_apart_on_the_wall_clock_across_daylight_saving() -> None:
    before_spring = datetime(2026, 3, 1, tzinfo=NEW_YORK).timestamp()
    assert shortest_gap("30 2 * * *", before_spring) == 86400  # not the 23 h of 8 March
    assert too_often("30 2 * * *", before_spring, 1440) is None


def test_a_rule_repeating_sooner_than_allowed_says_its_gap_and_the_setting() -> None:
    assert too_often("0 * * * *", MONDAY, 60) is None
    assert too_often("*/10 * * * *", MONDAY, 60) == (
        "'*/10 * * * *' repeats after 10 minutes at times; the shortest repeat allowed is"
        " 60 minutes (SKILLGATE_TASK_MIN_REPEAT_MINUTES)"
    )
    assert too_often("0 8 * * 1-5", MONDAY, 10080) is not None
    assert too_often("0 8 * * 1", MONDAY, 10080) is None
