"""Two replicas' task workers on one PostgreSQL schema (two pools, one process, a clock the test
moves): 200 tasks due in the same second, one replica stopped mid-delivery, each delivered once."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager

from gateway.core.scheduled import NewTask, Occurrence
from gateway.runtime.schedule import TaskWorker
from gateway.store.postgres import PostgresStore
from tests.runtime.test_shared_inbox import until
from tests.runtime.test_task_worker import Clock

TASKS = 200
DUE = 1_800_000_000.0
LEASE = 30.0


class Platform:
    """The chat platform both replicas send to; a replica's sends past `passes` hang there."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, int]] = []
        self.hanging: dict[str, int] = Counter()
        self.release = asyncio.Event()

    def replica(self, name: str, passes: int | None = None) -> Deliver:
        count = 0

        async def deliver(occurrence: Occurrence, fence: Callable[[], Awaitable[None]]) -> None:
            nonlocal count
            count += 1
            if passes is not None and count > passes:
                self.hanging[name] += 1
                await self.release.wait()  # a replica frozen mid-delivery
            await fence()
            self.sent.append((name, occurrence.task.id))

        return deliver


Deliver = Callable[[Occurrence, Callable[[], Awaitable[None]]], Awaitable[None]]


@asynccontextmanager
async def two_replicas(url: str) -> AsyncIterator[tuple[PostgresStore, list[PostgresStore]]]:
    async with AsyncExitStack() as stack:
        stores = [await stack.enter_async_context(PostgresStore(url)) for _ in range(2)]
        yield stores[0], stores


async def due_in_one_second(store: PostgresStore) -> list[int]:
    ids = []
    for n in range(TASKS):
        task = NewTask(
            channel="telegram",
            chat_id=str(1000 + n),
            user_id=str(1000 + n),
            kind="reminder",
            text=f"reminder {n}",
            timezone="Europe/Berlin",
            next_at=DUE + (n % 10) / 10,  # all within the same second
        )
        ids.append((await store.task_add(task)).id)
    return ids


async def assert_each_delivered_once(
    store: PostgresStore, ids: list[int], platform: Platform
) -> None:
    times = Counter(task_id for _, task_id in platform.sent)
    assert sorted(times) == sorted(ids), "some tasks were never delivered"
    assert max(times.values()) == 1, f"delivered twice: {[t for t, n in times.items() if n > 1]}"
    for task_id in ids:
        runs = await store.task_runs(task_id)
        assert len(runs) == 1, (task_id, runs)
        task = await store.task_get(task_id)
        assert task is not None and task.status == "done"


async def test_200_tasks_due_at_once_are_delivered_once_each_when_a_replica_is_killed(
    postgres_url: str,
) -> None:
    clock = Clock(DUE + 1)
    platform = Platform()
    async with two_replicas(postgres_url) as (store, stores):
        ids = await due_in_one_second(store)
        doomed = TaskWorker(
            stores[0],
            platform.replica("doomed", passes=10),
            holder="doomed",
            lease=LEASE,
            clock=clock,
            poll=0.01,
        )
        survivor = TaskWorker(
            stores[1],
            platform.replica("survivor"),
            holder="survivor",
            lease=LEASE,
            clock=clock,
            poll=0.01,
        )
        # Both race for the same due rows: the doomed replica takes one batch by hand.
        in_flight, _ = await asyncio.gather(doomed.tick(), survivor.start())
        try:
            await until(lambda: platform.hanging["doomed"] == len(in_flight) - 10, timeout=30)
            await until(lambda: sum(work.done() for work in in_flight) == 10)  # recorded
            for work in in_flight:
                work.cancel()  # SIGKILL: its claims stay, nothing is recorded or given back
            await asyncio.gather(*in_flight, return_exceptions=True)
            await until(lambda: len(platform.sent) == TASKS - len(in_flight) + 10, timeout=30)
            assert len(in_flight) > 10, "the doomed replica held nothing in flight"
            clock.now += LEASE + 1  # the dead replica's leases run out
            survivor.wake()
            await until(lambda: len(platform.sent) >= TASKS, timeout=30)
            await survivor.wait_idle()
        finally:
            await survivor.stop()
        await assert_each_delivered_once(store, ids, platform)
        by = Counter(name for name, _ in platform.sent)
        assert by == {"doomed": 10, "survivor": TASKS - 10}


async def test_a_replica_frozen_mid_delivery_past_its_lease_sends_nothing_after_waking(
    postgres_url: str,
) -> None:
    clock = Clock(DUE + 1)
    platform = Platform()
    async with two_replicas(postgres_url) as (store, stores):
        ids = await due_in_one_second(store)
        frozen = TaskWorker(
            stores[0],
            platform.replica("frozen", passes=0),
            holder="frozen",
            lease=LEASE,
            clock=clock,
        )
        survivor = TaskWorker(
            stores[1],
            platform.replica("survivor"),
            holder="survivor",
            lease=LEASE,
            clock=clock,
            poll=0.01,
        )
        in_flight = await frozen.tick()
        await until(lambda: platform.hanging["frozen"] == len(in_flight), timeout=30)
        await survivor.start()
        try:
            await until(lambda: len(platform.sent) == TASKS - len(in_flight), timeout=30)
            clock.now += LEASE + 1  # frozen: it renews nothing, its leases run out
            survivor.wake()
            await until(lambda: len(platform.sent) >= TASKS, timeout=30)
            await survivor.wait_idle()
            platform.release.set()  # it wakes up and checks its claims before sending
            await asyncio.gather(*in_flight)
        finally:
            await survivor.stop()
        await assert_each_delivered_once(store, ids, platform)
        assert all(name == "survivor" for name, _ in platform.sent)
