"""A platform's monthly push quota (LINE's), and the pushes scheduled tasks will need of it.

LINE counts the messages a bot pushes (a reply is free) against a monthly quota that
resets on the 1st at 00:00 Japan time. A task's delivery is a push: a task made in a LINE
chat is refused when the month's pushes left (limit minus consumption, read from LINE,
cached `CACHE_SECONDS`) would not cover what it and the chat's already active tasks need
by the month's end (one push per occurrence, an estimate: a long agent answer may take
more). A quota that cannot be read never blocks a task: it is logged and allowed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from gateway.core.scheduled import NewTask
from gateway.core.task_times import BadSchedule, next_due, zone

log = logging.getLogger(__name__)

QUOTA_ZONE = "Asia/Tokyo"
"""The timezone LINE's monthly quota resets in (the 1st, 00:00)."""
NEAR_END = 0.9
"""The share of the month's quota used at which the admins are told (once a month)."""
CACHE_SECONDS = 60.0
"""How long a quota read from the platform is used before it is read again."""
MAX_COUNTED = 10_000
"""The most occurrences of one task counted in a month (a crontab every minute)."""


@dataclass(frozen=True)
class PushQuota:
    """The month's push quota: its limit (None: none) and the pushes used so far."""

    limit: int | None
    used: int

    @property
    def left(self) -> int | None:
        """Pushes left this month; None without a limit."""
        return None if self.limit is None else max(0, self.limit - self.used)

    @property
    def near_end(self) -> bool:
        """Whether `NEAR_END` of the limit is used."""
        return self.limit is not None and self.used >= NEAR_END * self.limit


PushQuotaReader = Callable[[], Awaitable[PushQuota]]
"""Reads the quota from the platform; raises when it cannot."""


def month_of(now: float) -> str:
    """The quota month `now` falls in ("2026-12"), in LINE's timezone."""
    return f"{datetime.fromtimestamp(now, zone(QUOTA_ZONE)):%Y-%m}"


def month_end(now: float) -> float:
    """When the quota month of `now` ends (the next 1st, 00:00 in LINE's timezone)."""
    tz = zone(QUOTA_ZONE)
    local = datetime.fromtimestamp(now, tz)
    year, month = (local.year + 1, 1) if local.month == 12 else (local.year, local.month + 1)
    return datetime(year, month, 1, tzinfo=tz).timestamp()


def month_last_day(now: float) -> str:
    """The last day of `now`'s quota month ("2026-12-31"): the day a once-a-month flag is
    kept under, which retention's pruning of earlier days leaves until the month is over."""
    return f"{datetime.fromtimestamp(month_end(now) - 1, zone(QUOTA_ZONE)):%Y-%m-%d}"


def pushes_this_month(task: NewTask, now: float) -> int:
    """The occurrences of `task` from its next due time to the end of `now`'s quota month."""
    end = month_end(now)
    if task.next_at is None or task.next_at >= end:
        return 0
    if task.cron is None:
        return 1
    count, at = 1, task.next_at
    try:
        while count < MAX_COUNTED:
            found = next_due(task.cron, task.timezone, at)
            if found is None or found >= end:
                break
            count, at = count + 1, found
    except BadSchedule:
        return count
    return count


def pushes_needed(tasks: Iterable[NewTask], now: float) -> int:
    """What the `tasks` need of this month's quota, together."""
    return sum(pushes_this_month(task, now) for task in tasks)


@dataclass(frozen=True)
class Shortfall:
    """Why a task does not fit in the month's pushes: those left, those the active tasks
    need, and those the new one would."""

    left: int
    needed: int
    more: int

    def said(self, channel: str) -> str:
        """Why, for an operator (the CLI, the console); a user reads the translated notice."""
        return (
            f"{channel}'s push quota for this month would run out: {self.left} pushes are"
            f" left, the active tasks need {self.needed} and this one would need {self.more}"
        )


async def shortfall(
    task: NewTask,
    quota: PushQuota | None,
    active: Callable[[float], Awaitable[Iterable[NewTask]]],
    now: float,
) -> Shortfall | None:
    """Whether `quota` cannot cover `task` beside the channel's tasks `active(month_end)`
    returns (read only where it matters); None: it fits, or the quota is unknown (None)
    or has no limit."""
    more = pushes_this_month(task, now)
    if more == 0 or quota is None or quota.left is None:
        return None
    needed = pushes_needed(await active(month_end(now)), now)
    return None if needed + more <= quota.left else Shortfall(quota.left, needed, more)


class CachedQuota:
    """A platform's quota read at most once per `ttl` seconds; None when it cannot be read."""

    def __init__(
        self,
        read: PushQuotaReader,
        *,
        ttl: float = CACHE_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.read = read
        self.ttl = ttl
        self.clock = clock
        self._kept: tuple[float, PushQuota | None] | None = None

    async def get(self, *, fresh: bool = False) -> PushQuota | None:
        """The quota, from the cache while it is fresh (`fresh`: read now); None (logged)
        when reading fails, kept as long (a platform that is down is not waited on by every
        task made meanwhile)."""
        now = self.clock()
        if not fresh and self._kept is not None and now - self._kept[0] < self.ttl:
            return self._kept[1]
        try:
            quota: PushQuota | None = await self.read()
        except Exception as exc:
            log.warning("the push quota could not be read (%s): tasks are not limited by it", exc)
            quota = None
        self._kept = (now, quota)
        return quota

    def spent(self, pushes: int = 1) -> None:
        """Count pushes just made against the cached quota until it is read again (an
        estimate: a push counted in the read already is counted twice)."""
        if self._kept is not None and (quota := self._kept[1]) is not None:
            self._kept = (self._kept[0], PushQuota(quota.limit, quota.used + pushes))
