"""When a task is due next, in its owner's timezone, daylight-saving changes included.

A repeating task is five crontab fields in the standard meaning (0 or 7 is Sunday), read
by APScheduler's `CronTrigger` in the task's `zoneinfo` timezone. Two things are settled
here rather than left to the trigger:

- APScheduler counts weekdays from Monday (0 is Monday): numbers in the weekday field are
  turned into names first, so `1-5` is Monday to Friday as in every crontab.
- A wall time that occurs twice (the hour the clocks go back) fires once, at its first
  occurrence; a wall time that does not exist (the hour the clocks go forward) fires once,
  an hour later by the clock (02:30 becomes 03:30 that day). The trigger alone would fire
  twice on the day the clocks go back.
"""

from __future__ import annotations

import re
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from apscheduler.triggers.cron import CronTrigger

REPEATS = ("once", "daily", "weekdays", "weekly", "monthly", "cron")
"""How a task may repeat; `cron` is for the console and the command line."""
WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat", "sun")
"""Crontab weekday numbers (0-7) by name."""


class BadSchedule(ValueError):
    """A timezone, repeat or cron expression that cannot be used (its message says why)."""


def zone(name: str) -> ZoneInfo:
    """The IANA timezone `name` (Asia/Tokyo), or BadSchedule."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise BadSchedule(f"unknown timezone {name!r} (an IANA name such as Asia/Tokyo)") from exc


def cron_for(repeat: str, first: datetime) -> str | None:
    """The crontab fields of `repeat` anchored at the first local due time (None: once)."""
    m, h = first.minute, first.hour
    match repeat:
        case "once":
            return None
        case "daily":
            return f"{m} {h} * * *"
        case "weekdays":
            return f"{m} {h} * * 1-5"
        case "weekly":
            return f"{m} {h} * * {first.isoweekday() % 7}"
        case "monthly":
            return f"{m} {h} {first.day} * *"
    raise BadSchedule(f"unknown repeat {repeat!r} (one of {', '.join(REPEATS)})")


def trigger(cron: str, tz: ZoneInfo) -> CronTrigger:
    """APScheduler's trigger for five standard crontab fields in `tz`."""
    fields = cron.split()
    if len(fields) != 5:
        raise BadSchedule(
            f"a cron expression has 5 fields (minute hour day month weekday): {cron!r}"
        )
    minute, hour, day, month, weekday = fields
    weekday = re.sub(r"\d+", lambda n: _weekday_name(n.group()), weekday)
    try:
        return CronTrigger(
            minute=minute, hour=hour, day=day, month=month, day_of_week=weekday, timezone=tz
        )
    except ValueError as exc:
        raise BadSchedule(f"bad cron expression {cron!r}: {exc}") from exc


def _weekday_name(number: str) -> str:
    if int(number) > 7:
        raise BadSchedule(f"a weekday is 0-7 (0 and 7: Sunday), not {number}")
    return WEEKDAYS[int(number)]


def next_due(cron: str, tz_name: str, after: float) -> float | None:
    """The first due time of `cron` strictly after `after` (epoch seconds), once per wall time."""
    tz = zone(tz_name)
    rule = trigger(cron, tz)
    previous = datetime.fromtimestamp(after, tz)
    # Arithmetic on epoch seconds: adding to an aware datetime adds to its wall time, which
    # loses the hour the clocks go back.
    start = datetime.fromtimestamp(after + 1, tz)
    while True:
        found: datetime | None = rule.get_next_fire_time(None, start)
        if found is None:
            return None
        if found.replace(tzinfo=None) != previous.replace(tzinfo=None) or found.fold == 0:
            return found.timestamp()
        # The same wall time again, the hour the clocks went back: it has fired already.
        start = datetime.fromtimestamp(found.timestamp() + 1, tz)


def upcoming(cron: str, tz_name: str, after: float, count: int) -> list[float]:
    """The next `count` due times of `cron` after `after` (for listings and tests)."""
    times: list[float] = []
    at = after
    while len(times) < count:
        found = next_due(cron, tz_name, at)
        if found is None:
            break
        times.append(found)
        at = found
    return times


SCAN_SECONDS = 366 * 86400
"""How far ahead `shortest_gap` looks: a year covers every month and weekday a rule names."""
SCAN_TIMES = 10_000
"""The most occurrences `shortest_gap` reads (a rule that fires more often stops sooner)."""


def shortest_gap(cron: str, after: float, below: float = 0.0) -> float | None:
    """The shortest time in seconds between two consecutive due times of `cron` over the
    year after `after` (None: it fires at most once). Read on the wall clock (in UTC), so a
    daily task is a day apart also on the days the clocks change. Stops at the first gap
    shorter than `below`: that is enough to refuse the rule."""
    rule = trigger(cron, ZoneInfo("UTC"))
    end = after + SCAN_SECONDS
    previous: float | None = None
    shortest: float | None = None
    start = datetime.fromtimestamp(after, ZoneInfo("UTC"))
    for _ in range(SCAN_TIMES):
        found: datetime | None = rule.get_next_fire_time(None, start)
        if found is None or found.timestamp() > end:
            break
        at = found.timestamp()
        if previous is not None:
            shortest = at - previous if shortest is None else min(shortest, at - previous)
            if shortest < below:
                break
        previous = at
        start = datetime.fromtimestamp(at + 1, ZoneInfo("UTC"))
    return shortest


def too_often(cron: str, after: float, min_minutes: float) -> str | None:
    """Why `cron` repeats more often than every `min_minutes` (None: it does not)."""
    least = min_minutes * 60
    gap = shortest_gap(cron, after, below=least)
    if gap is None or gap >= least:
        return None
    return (
        f"{cron!r} repeats after {_minutes(gap)} at times; the shortest repeat allowed is"
        f" {_minutes(least)} (SKILLGATE_TASK_MIN_REPEAT_MINUTES)"
    )


def _minutes(seconds: float) -> str:
    minutes = round(seconds / 60)
    return "1 minute" if minutes == 1 else f"{minutes} minutes"


def cron_first(cron: str, tz_name: str, now: float, min_repeat_minutes: float) -> float:
    """The first due time after `now` of an operator's crontab task in `tz_name`, checked:
    BadSchedule says why when the timezone or expression is bad, the rule repeats sooner
    than `min_repeat_minutes`, or it never matches."""
    trigger(cron, zone(tz_name))
    if (why := too_often(cron, now, min_repeat_minutes)) is not None:
        raise BadSchedule(why)
    found = next_due(cron, tz_name, now)
    if found is None:
        raise BadSchedule(f"the cron expression {cron!r} never matches")
    return found
