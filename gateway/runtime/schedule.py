"""The task worker: each due occurrence of a scheduled task delivered once, late rather than never.

Every replica (or the one process) runs one. Due tasks are claimed from the database
under a lease (`ScheduleQueries.task_claim`), so with N replicas each occurrence has one
owner at a time; the owner checks its claim just before it sends (`task_fence`) and
records the outcome and the next due time in one transaction fenced by the same claim
(`task_finish`). A replica killed at any point leaves its claims to expire; another one
then delivers what was not recorded. What remains is the send window of
docs/RELIABILITY.md W1: killed after the platform accepted a message but before the
outcome was written, an occurrence is sent again (LINE drops the copy: the push carries
a retry key made of the task and its due time).

A chat the platform says cannot be written to (the bot was blocked or removed) pauses its
task at once, the occurrence recorded as failed: it is not retried for ever.

An occurrence claimed more than `grace` seconds after its due time (the gateway was down)
is not fired: it is recorded as missed and its owner told, once; one claimed later than
`LATE_AFTER` but within the grace period is delivered marked late. A repeating task then
moves to its first due time after now, so a long outage never fires a burst.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Literal, Protocol

from gateway.core.scheduled import Deliver, Occurrence, Outcome, ScheduledTask, TaskRun
from gateway.core.task_times import BadSchedule, next_due
from gateway.core.tasks import cancel_and_wait
from gateway.errors import ChatUnreachable, ClaimLost, StoreError
from gateway.store.schedule import ScheduleQueries

log = logging.getLogger(__name__)

LATE_AFTER = 60.0
"""An occurrence delivered more than this many seconds after its due time is marked late."""
MAX_FAILURES = 5
"""Deliveries of one occurrence that may fail before it is recorded as failed."""


class TaskCounts(Protocol):
    """Where occurrences are counted (/metrics)."""

    def task_occurrence(self, outcome: str) -> None: ...


class TaskWorker:
    """Claims due tasks and delivers each occurrence through `deliver`."""

    def __init__(
        self,
        store: ScheduleQueries,
        deliver: Deliver,
        *,
        holder: str,
        lease: float = 60.0,
        grace: float = 3600.0,
        poll: float = 5.0,
        batch: int = 64,
        clock: Callable[[], float] = time.time,
        counts: TaskCounts | None = None,
        backoff: Callable[[int], float] = lambda failures: min(3600.0, 30.0 * 2 ** (failures - 1)),
    ) -> None:
        self.store = store
        self.deliver = deliver
        self.holder = holder
        self.lease = lease
        self.grace = grace
        self.poll = poll
        self.batch = batch
        self.clock = clock
        self.counts = counts
        self.backoff = backoff
        self._inflight: dict[int, tuple[int, asyncio.Task[None]]] = {}
        """Task id: the claim number it is delivered under, and the asyncio task doing it."""
        self._loop: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._more = False
        """The last claim took all the room there was: more may be due now."""

    async def start(self) -> None:
        """Claim due tasks now (what start-up finds overdue, within the grace, runs late)."""
        self._loop = asyncio.create_task(self._run(), name="tasks:claim")

    def wake(self) -> None:
        """A task was created or changed: look for due work without waiting for the poll."""
        self._wake.set()

    async def tick(self) -> list[asyncio.Task[None]]:
        """One round: renew the claims in flight, claim what is due, start delivering it.

        Returns the deliveries started (tests await them; the loop does not).
        """
        now = self.clock()
        await self.renew(now)
        room = self.batch - len(self._inflight)
        claimed = await self.store.task_claim(self.holder, self.lease, limit=room, now=now)
        self._more = room > 0 and len(claimed) == room
        started = []
        for task in claimed:
            stale = self._inflight.get(task.id)
            if stale is not None:  # lost it, then claimed it again: the old work stops
                stale[1].cancel()
            work = asyncio.create_task(self._occurrence(task), name=f"tasks:{task.id}")
            self._inflight[task.id] = (task.claim, work)
            started.append(work)
        return started

    async def renew(self, now: float | None = None) -> None:
        """Extend the leases of the deliveries in flight; stop those whose claim is gone."""
        claims = sorted((task_id, claim) for task_id, (claim, _) in self._inflight.items())
        if not claims:
            return
        at = self.clock() if now is None else now
        kept = set(await self.store.task_renew(self.holder, claims, self.lease, now=at))
        for task_id, claim in claims:
            working = self._inflight.get(task_id)
            if task_id in kept or working is None or working[0] != claim or working[1].done():
                continue
            log.warning("task %d was taken over by another replica: stopped delivering it", task_id)
            working[1].cancel()

    async def _run(self) -> None:
        while True:
            self._wake.clear()
            try:
                await self.tick()
            except StoreError as exc:
                log.warning("claiming due tasks failed (%s); trying again", exc)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.poll)

    async def _occurrence(self, task: ScheduledTask) -> None:
        try:
            await self._deliver(task)
        except ClaimLost:
            log.warning("task %d was taken over by another replica before it sent", task.id)
        finally:
            working = self._inflight.get(task.id)
            if working is not None and working[0] == task.claim:
                del self._inflight[task.id]
            if self._more and len(self._inflight) <= self.batch // 2:
                # More were due than one batch (10,000 reminders at nine): claim the next
                # half batch now, not at the next poll (64 every 5 s would take 13 minutes).
                self._more = False
                self._wake.set()

    async def _deliver(self, task: ScheduledTask) -> None:
        assert task.next_at is not None  # claimed only while due
        due = task.next_at
        now = self.clock()
        late = now - due
        timing: Literal["on_time", "late", "missed"] = (
            "missed" if late > self.grace else "late" if late > LATE_AFTER else "on_time"
        )
        occurrence = Occurrence(task=task, due_at=due, timing=timing)

        async def fence() -> None:
            if not await self.store.task_fence(
                self.holder, task.id, task.claim, self.lease, now=self.clock()
            ):
                raise ClaimLost(f"task {task.id} is no longer claimed by this replica")

        outcome: Outcome = "sent" if timing == "on_time" else timing
        detail: str | None = None
        pause = False
        try:
            await self.deliver(occurrence, fence)
        except (asyncio.CancelledError, ClaimLost):
            raise
        except ChatUnreachable as exc:  # no retry can help: paused, not retried for ever
            outcome, detail, pause = "failed", f"the chat cannot be written to; paused: {exc}", True
            log.warning("task %d paused: its chat cannot be written to (%s)", task.id, exc)
        except Exception as exc:
            failures = task.failures + 1
            if failures < MAX_FAILURES:
                log.warning("task %d failed (attempt %d), retrying: %s", task.id, failures, exc)
                retry_at = self.clock() + self.backoff(failures)
                await self.store.task_retry_later(task, retry_at)
                return
            outcome, detail = "failed", f"{type(exc).__name__}: {exc}"
            log.error("task %d failed %d times; recorded as failed: %s", task.id, failures, exc)
        ran = self.clock()
        run = TaskRun(
            task_id=task.id,
            due_at=due,
            outcome=outcome,
            ran_at=ran,
            holder=self.holder,
            detail=detail,
        )
        if await self.store.task_finish(task, run, self.next_time(task, due, ran), pause=pause):
            if self.counts is not None:
                self.counts.task_occurrence(outcome)
        else:
            log.warning(
                "task %d was cancelled or taken over before its outcome was recorded", task.id
            )

    @staticmethod
    def next_time(task: ScheduledTask, due: float, now: float) -> float | None:
        """The next due time after both the occurrence and now (no burst after an outage)."""
        if task.cron is None:
            return None
        try:
            return next_due(task.cron, task.timezone, max(due, now))
        except BadSchedule as exc:  # a timezone the host's tz database no longer knows
            log.error("task %d cannot repeat any more: %s", task.id, exc)
            return None

    async def wait_idle(self) -> None:
        """Until every delivery in flight is done (tests and a clean stop)."""
        while self._inflight:
            await asyncio.gather(
                *(work for _, work in self._inflight.values()), return_exceptions=True
            )

    async def stop(self, timeout: float = 10.0) -> None:
        """Stop claiming, let deliveries finish within `timeout`, give back the claims left."""
        if self._loop is not None:
            await cancel_and_wait(self._loop)
            self._loop = None
        works = [work for _, work in self._inflight.values()]
        if works:
            _done, pending = await asyncio.wait(works, timeout=timeout)
            await cancel_and_wait(*pending)
        with contextlib.suppress(StoreError):
            await self.store.task_release(self.holder)
