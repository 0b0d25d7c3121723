"""The schedules: APScheduler 3's AsyncIOScheduler, started inside the running loop.

Synthesis every interval, retention every hour. APScheduler keeps one instance of a
job at a time in this process; the lock row the synthesizer takes keeps other processes
out as well, and retention's deletes are the same whichever replica runs them first.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

from apscheduler.schedulers.asyncio import AsyncIOScheduler

from gateway.core.tasks import cancel_and_wait
from gateway.runtime.retention import Orphans, RetentionStore, purge_old
from gateway.synthesis.synthesizer import Synthesizer

log = logging.getLogger(__name__)
JOB_ID = "synthesis"
RETENTION_JOB_ID = "retention"
RETENTION_EVERY_SECONDS = 3600.0


def every(
    job: Callable[[], Awaitable[None]], job_id: str, seconds: float, first: float
) -> AsyncIOScheduler:
    """A started scheduler running `job` every `seconds` from `first` (epoch seconds)."""
    scheduler = AsyncIOScheduler(
        timezone="UTC",
        job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": 300},
    )
    scheduler.add_job(
        job,
        "interval",
        seconds=seconds,
        id=job_id,
        replace_existing=True,
        next_run_time=datetime.fromtimestamp(first, UTC),
    )
    scheduler.start()
    return scheduler


async def shut_down(scheduler: AsyncIOScheduler | None) -> None:
    """Stop a scheduler started by `every` (None: nothing to stop)."""
    if scheduler is not None:
        scheduler.shutdown(wait=False)
        await asyncio.sleep(0)  # shutdown is scheduled with call_soon_threadsafe


class SynthesisSchedule:
    """Runs a synthesis pass every `interval_minutes`."""

    def __init__(
        self,
        synthesizer: Synthesizer,
        interval_minutes: float,
        *,
        last_started: Callable[[], Awaitable[float | None]] | None = None,
    ) -> None:
        """`last_started` (replicas): each replica schedules, and a tick is skipped when
        another replica's pass started within half an interval."""
        self.synthesizer = synthesizer
        self.interval_minutes = interval_minutes
        self.last_started = last_started
        self._scheduler: AsyncIOScheduler | None = None
        self._current: asyncio.Task[object] | None = None

    def start(self, last_run_at: float | None = None, now: float | None = None) -> None:
        """Start the scheduler inside the running loop; the cadence continues from the last run.

        Counting from the stored last run, not from start-up, keeps a gateway that
        restarts more often than the interval from never synthesizing at all.
        """
        at = time.time() if now is None else now
        interval = self.interval_minutes * 60
        first = at + interval if last_run_at is None else max(at, last_run_at + interval)
        self._scheduler = every(self._tick, JOB_ID, interval, first)
        log.info("synthesis scheduled every %g minute(s)", self.interval_minutes)

    def next_pass_at(self) -> float | None:
        """When the next scheduled pass starts (epoch seconds), or None when not scheduled."""
        job = self._scheduler.get_job(JOB_ID) if self._scheduler is not None else None
        when = job.next_run_time if job is not None else None
        return None if when is None else float(when.timestamp())

    async def _tick(self) -> None:
        if self.last_started is not None:
            last = await self.last_started()
            if last is not None and time.time() - last < self.interval_minutes * 30:
                log.info(
                    "scheduled synthesis skipped: a pass started %.0f s ago", time.time() - last
                )
                return
        self._current = asyncio.current_task()
        try:
            summary = await self.synthesizer.run("schedule")
        finally:
            self._current = None
        if summary.status == "busy":
            log.info("scheduled synthesis skipped: another pass is running")

    async def stop(self) -> None:
        """Stop scheduling and interrupt a pass in progress (it records itself as interrupted)."""
        await shut_down(self._scheduler)
        self._scheduler = None
        task = self._current
        if task is not None and not task.done():
            await cancel_and_wait(task)


class RetentionSchedule:
    """Deletes conversations older than `days` at start-up and then every hour."""

    def __init__(
        self,
        store: RetentionStore,
        days: int,
        *,
        interval: float = RETENTION_EVERY_SECONDS,
        media: Path | None = None,
        review: Orphans | None = None,
    ) -> None:
        self.store = store
        self.days = days
        self.media = media
        self.review = review
        self.interval = interval
        self._scheduler: AsyncIOScheduler | None = None

    def start(self) -> None:
        self._scheduler = every(self.tick, RETENTION_JOB_ID, self.interval, time.time())
        log.info("conversations older than %d day(s) are deleted every hour", self.days)

    async def tick(self) -> None:
        try:
            await purge_old(self.store, self.days, media=self.media, review=self.review)
        except Exception:
            log.exception("retention pass failed; the next one tries again")

    async def stop(self) -> None:
        await shut_down(self._scheduler)
        self._scheduler = None
