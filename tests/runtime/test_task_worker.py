"""The task worker on one database, with a clock the test moves: on time, late, missed (never
a burst), failures retried then recorded, and a worker killed or stalled mid-delivery."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from gateway.core.scheduled import NewTask, Occurrence
from gateway.runtime.schedule import LATE_AFTER, MAX_FAILURES, TaskWorker
from gateway.store.sqlite import SqliteStore

TOKYO = ZoneInfo("Asia/Tokyo")
NINE = datetime(2026, 12, 7, 9, 0, tzinfo=TOKYO).timestamp()
DAY = 86400.0


class Clock:
    """The time the worker sees; the test moves it."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class Chat:
    """Records what each delivery said after its fence let it through."""

    def __init__(self) -> None:
        self.said: list[tuple[int, float, str]] = []
        self.hold: asyncio.Event | None = None
        self.held = asyncio.Event()
        self.failing = 0

    async def __call__(self, occurrence: Occurrence, fence: Callable[[], Awaitable[None]]) -> None:
        if self.hold is not None:
            self.held.set()
            await self.hold.wait()
        if self.failing:
            self.failing -= 1
            raise ConnectionError("the platform did not answer")
        await fence()
        self.said.append((occurrence.task.id, occurrence.due_at, occurrence.timing))


class Counts:
    def __init__(self) -> None:
        self.seen: list[str] = []

    def task_occurrence(self, outcome: str) -> None:
        self.seen.append(outcome)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    async with SqliteStore(tmp_path / "db.sqlite") as opened:
        yield opened


def daily_at_nine(**more: object) -> NewTask:
    values: dict[str, object] = {
        "channel": "telegram",
        "chat_id": "42",
        "user_id": "42",
        "kind": "reminder",
        "text": "stretch",
        "timezone": "Asia/Tokyo",
        "next_at": NINE,
        "repeat": "daily",
        "cron": "0 9 * * *",
    }
    return NewTask.model_validate(values | more)


def worker(store: SqliteStore, chat: Chat, clock: Clock, holder: str = "a") -> TaskWorker:
    return TaskWorker(
        store, chat, holder=holder, lease=60.0, grace=3600.0, clock=clock, counts=Counts()
    )


async def tick(w: TaskWorker) -> None:
    await asyncio.gather(*await w.tick())


async def test_a_due_task_is_delivered_once_on_time_and_moves_to_the_next_day(
    store: SqliteStore,
) -> None:
    task = await store.task_add(daily_at_nine())
    chat, clock = Chat(), Clock(NINE - 1)
    w = worker(store, chat, clock)
    await tick(w)
    assert chat.said == []  # not due yet
    clock.now = NINE + 2
    await tick(w)
    await tick(w)
    assert chat.said == [(task.id, NINE, "on_time")]
    stored = await store.task_get(task.id)
    assert stored is not None and stored.next_at == NINE + DAY and stored.last_outcome == "sent"
    assert isinstance(w.counts, Counts) and w.counts.seen == ["sent"]


async def test_a_task_missed_within_the_grace_runs_at_start_up_marked_late(
    store: SqliteStore,
) -> None:
    task = await store.task_add(daily_at_nine())
    chat = Chat()
    await tick(worker(store, chat, Clock(NINE + 20 * 60)))  # started 20 minutes after 09:00
    assert chat.said == [(task.id, NINE, "late")]
    assert [r.outcome for r in await store.task_runs(task.id)] == ["late"]


async def test_a_task_missed_past_the_grace_is_reported_once_and_never_fired_in_a_burst(
    store: SqliteStore,
) -> None:
    task = await store.task_add(daily_at_nine())
    chat, clock = Chat(), Clock(NINE + 5 * DAY + 3 * 3600)  # down five days, back at 12:00
    w = worker(store, chat, clock)
    await tick(w)
    await tick(w)
    assert chat.said == [(task.id, NINE, "missed")]  # one report, not six reminders
    stored = await store.task_get(task.id)
    assert stored is not None and stored.next_at == NINE + 6 * DAY  # tomorrow at 09:00
    assert [r.outcome for r in await store.task_runs(task.id)] == ["missed"]


async def test_on_time_late_and_missed_are_told_apart_by_the_grace(store: SqliteStore) -> None:
    chat = Chat()
    ids = []
    for late in (LATE_AFTER - 1, LATE_AFTER + 1, 3600 + 1):
        ids.append((await store.task_add(daily_at_nine(next_at=NINE - late))).id)
    await tick(worker(store, chat, Clock(NINE)))
    assert sorted((i, t) for i, _, t in chat.said) == [
        (ids[0], "on_time"),
        (ids[1], "late"),
        (ids[2], "missed"),
    ]


async def test_a_failing_delivery_is_retried_with_backoff_then_recorded_as_failed(
    store: SqliteStore,
) -> None:
    task = await store.task_add(daily_at_nine(repeat="once", cron=None))
    chat, clock = Chat(), Clock(NINE)
    chat.failing = MAX_FAILURES
    w = worker(store, chat, clock)
    for _ in range(MAX_FAILURES - 1):
        await tick(w)
        await tick(w)  # still backing off: nothing claimed
        clock.now += 3600
    assert chat.said == [] and await store.task_runs(task.id) == []
    await tick(w)
    (run,) = await store.task_runs(task.id)
    assert run.outcome == "failed" and run.detail is not None and "did not answer" in run.detail
    stored = await store.task_get(task.id)
    assert stored is not None and stored.status == "done"


async def test_a_delivery_that_fails_once_is_sent_at_the_retry(store: SqliteStore) -> None:
    task = await store.task_add(daily_at_nine())
    chat, clock = Chat(), Clock(NINE)
    chat.failing = 1
    w = worker(store, chat, clock)
    await tick(w)
    clock.now += 31.0  # past the first backoff (30 s)
    await tick(w)
    assert chat.said == [(task.id, NINE, "on_time")]


async def test_a_worker_killed_mid_delivery_leaves_it_to_the_next_once_its_lease_ends(
    store: SqliteStore,
) -> None:
    task = await store.task_add(daily_at_nine())
    doomed_chat, clock = Chat(), Clock(NINE)
    doomed_chat.hold = asyncio.Event()
    doomed = worker(store, doomed_chat, clock, "doomed")
    (work,) = await doomed.tick()
    await doomed_chat.held.wait()
    work.cancel()  # what SIGKILL leaves: the claim, no outcome, no release
    chat = Chat()
    restarted = worker(store, chat, clock, "restarted")
    await tick(restarted)
    assert chat.said == []  # the dead worker's lease still runs
    clock.now += 61.0
    await tick(restarted)
    await tick(restarted)
    assert chat.said == [(task.id, NINE, "late")]  # the restart was a minute late
    assert doomed_chat.said == []


async def test_a_stalled_worker_whose_task_was_taken_over_sends_nothing(
    store: SqliteStore,
) -> None:
    task = await store.task_add(daily_at_nine())
    stalled_chat, clock = Chat(), Clock(NINE)
    stalled_chat.hold = asyncio.Event()
    stalled = worker(store, stalled_chat, clock, "stalled")
    (work,) = await stalled.tick()
    await stalled_chat.held.wait()
    clock.now += 61.0
    chat = Chat()
    await tick(worker(store, chat, clock, "other"))
    stalled_chat.hold.set()  # it wakes up, checks its claim before sending
    await work
    assert chat.said == [(task.id, NINE, "late")]
    assert stalled_chat.said == []
    assert [r.holder for r in await store.task_runs(task.id)] == ["other"]


async def test_a_clean_stop_gives_its_claims_back_at_once(store: SqliteStore) -> None:
    task = await store.task_add(daily_at_nine())
    held_chat, clock = Chat(), Clock(NINE)
    held_chat.hold = asyncio.Event()
    first = worker(store, held_chat, clock, "first")
    await first.tick()
    await held_chat.held.wait()
    await first.stop(timeout=0.01)
    chat = Chat()
    await tick(worker(store, chat, clock, "second"))  # no lease to wait for
    assert chat.said == [(task.id, NINE, "on_time")]


async def test_more_tasks_due_than_a_batch_are_claimed_as_room_frees_not_at_the_next_poll(
    store: SqliteStore,
) -> None:
    clock, chat = Clock(NINE + 1), Chat()
    for n in range(50):
        await store.task_add(daily_at_nine(chat_id=str(n), repeat="once", cron=None))
    worker = TaskWorker(store, chat, holder="one", clock=clock, batch=8, poll=3600.0)
    await worker.start()  # one poll an hour: only a freed batch can start the rest in time
    try:
        async with asyncio.timeout(20):
            while len(chat.said) < 50:
                await asyncio.sleep(0.01)
        await worker.wait_idle()
    finally:
        await worker.stop()
    assert sorted(task_id for task_id, _, _ in chat.said) == list(range(1, 51))
