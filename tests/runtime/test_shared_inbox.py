"""The replicas' inbox worker in one process: two workers, two pools, one PostgreSQL schema."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager

import pytest

from gateway.core.records import InboxItem, Trace
from gateway.core.tasks import cancel_and_wait
from gateway.runtime import replicas
from gateway.runtime.replicas import FencedAnswers, SharedInboxWorker
from gateway.store.postgres import PostgresStore
from tests.store_support import current_session


@asynccontextmanager
async def two_workers(
    url: str, lease: float
) -> AsyncIterator[tuple[PostgresStore, list[SharedInboxWorker], list[list[str]]]]:
    """Two replicas' workers; `handled[n]` lists what worker n answered, in order."""
    async with AsyncExitStack() as stack:
        stores = [await stack.enter_async_context(PostgresStore(url)) for _ in range(2)]
        workers = []
        handled: list[list[str]] = [[], []]
        for n, store in enumerate(stores):
            worker = SharedInboxWorker(store, holder=f"r{n}", lease=lease, poll=0.05)
            workers.append(worker)
        yield stores[0], workers, handled


async def until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    """Wait, at most `timeout` seconds, for `condition` to hold."""

    async def poll() -> None:
        while not condition():
            await asyncio.sleep(0.01)

    await asyncio.wait_for(poll(), timeout)


async def taken_by_first(
    store: PostgresStore, workers: list[SharedInboxWorker], handled: list[list[str]]
) -> InboxItem:
    """Worker 0 starts and has an update it stored in hand."""
    await workers[0].start()
    item = await store.inbox_add("telegram", "u1", "chat", "{}")
    assert item is not None
    workers[0].submit(item)
    await until(lambda: bool(handled[0]))
    return item


async def expire_leases(store: PostgresStore) -> None:
    """What a replica stalled past its lease looks like to the others."""
    async with store.connection() as conn:
        await conn.execute("update inbox set lease_until = 0 where processed_at is null")


async def taken_over(
    store: PostgresStore, workers: list[SharedInboxWorker], handled: list[list[str]]
) -> None:
    """Worker 0 stalls past its lease; worker 1 takes the update over and answers it.

    A stalled replica claims nothing either: its claim loop is stopped (and waited for)
    before the leases expire, so that no claim of its own still on its way to the database
    takes the expired update back before worker 1 starts, however slow the machine.
    """
    claiming = workers[0]._loops[0]  # the claim loop (`SharedInboxWorker.start`)
    await cancel_and_wait(claiming)
    await expire_leases(store)
    await workers[1].start()
    await until(lambda: bool(handled[1]))
    await workers[1].wait_idle(5)


async def test_a_slow_answer_keeps_its_claim_past_the_lease(postgres_url: str) -> None:
    release = asyncio.Event()
    async with two_workers(postgres_url, lease=1.0) as (store, workers, handled):

        async def slow(item: InboxItem) -> None:
            handled[0].append(item.update_id)
            await release.wait()

        async def fast(item: InboxItem) -> None:
            handled[1].append(item.update_id)

        workers[0].handlers["telegram"] = slow
        workers[1].handlers["telegram"] = fast
        await taken_by_first(store, workers, handled)
        await workers[1].start()
        await asyncio.sleep(2.5)  # over twice the lease: only renewal keeps it
        assert handled == [["u1"], []]
        release.set()
        await workers[0].wait_idle(5)
        assert await store.inbox_pending_count() == 0
        for worker in workers:
            await worker.stop(1)
    assert handled == [["u1"], []]


async def test_a_clean_stop_hands_unfinished_work_over_at_once(postgres_url: str) -> None:
    async with two_workers(postgres_url, lease=60.0) as (store, workers, handled):
        answered = asyncio.Event()

        async def never(item: InboxItem) -> None:
            handled[0].append(item.update_id)
            await asyncio.Event().wait()

        async def fast(item: InboxItem) -> None:
            handled[1].append(item.update_id)
            answered.set()

        workers[0].handlers["telegram"] = never
        workers[1].handlers["telegram"] = fast
        await taken_by_first(store, workers, handled)
        await workers[0].stop(timeout=0.1)  # cancelled, and its claim given back
        await workers[1].start()
        await asyncio.wait_for(answered.wait(), 5)  # long before the 60 s lease
        await workers[1].stop(1)
    assert handled == [["u1"], ["u1"]]


async def test_a_replica_that_lost_its_claim_never_sends(postgres_url: str) -> None:
    """Stalled past the lease, taken over: the first replica's late reply is not sent."""
    sent: list[str] = []
    async with two_workers(postgres_url, lease=60.0) as (store, workers, handled):
        go = asyncio.Event()

        async def stalled(item: InboxItem) -> None:
            handled[0].append(item.update_id)
            await go.wait()  # the stall
            await workers[0].hold(item)  # what a fenced reply does before sending
            sent.append("r0")

        async def other(item: InboxItem) -> None:
            handled[1].append(item.update_id)
            await workers[1].hold(item)
            sent.append("r1")

        workers[0].handlers["telegram"] = stalled
        workers[1].handlers["telegram"] = other
        await taken_by_first(store, workers, handled)
        await taken_over(store, workers, handled)
        go.set()  # the stalled replica wakes up and tries to answer
        await workers[0].wait_idle(5)
        assert await store.inbox_pending_count() == 0
        for worker in workers:
            await worker.stop(1)
    assert sent == ["r1"]
    assert handled == [["u1"], ["u1"]]


async def test_work_whose_claim_is_gone_is_cancelled_at_the_next_renewal(
    postgres_url: str,
) -> None:
    cancelled = asyncio.Event()
    async with two_workers(postgres_url, lease=60.0) as (store, workers, handled):

        async def thinking(item: InboxItem) -> None:
            handled[0].append(item.update_id)
            try:
                await asyncio.Event().wait()  # a model call that takes its time
            except asyncio.CancelledError:
                cancelled.set()
                raise

        async def other(item: InboxItem) -> None:
            handled[1].append(item.update_id)

        workers[0].handlers["telegram"] = thinking
        workers[1].handlers["telegram"] = other
        item = await taken_by_first(store, workers, handled)
        await taken_over(store, workers, handled)
        assert await workers[0].renew() == [item.id]
        await asyncio.wait_for(cancelled.wait(), 5)
        await workers[0].wait_idle(5)
        assert await store.inbox_pending_count() == 0
        for worker in workers:
            await worker.stop(1)
    assert handled == [["u1"], ["u1"]]


async def test_a_reply_right_after_its_answer_was_stored_under_the_claim_needs_no_fence_of_its_own(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fences: list[int] = []
    async with PostgresStore(postgres_url) as store:
        fence = store.inbox_fence

        async def counted(holder: str, item_id: int, claim: int, lease: float) -> bool:
            fences.append(item_id)
            return await fence(holder, item_id, claim, lease)

        monkeypatch.setattr(store, "inbox_fence", counted)
        worker = SharedInboxWorker(store, holder="r0", lease=30, poll=0.05)
        answers = FencedAnswers(store)
        done: list[str] = []

        async def handler(item: InboxItem) -> None:
            session = await current_session(store, "telegram", item.chat_key, "u", 1000.0, 60)
            await answers.add_answer(
                session.id, "hi", kind="normal", inbox_id=item.id, trace=Trace(), now=1.0,
                user_id="u",
            )  # fmt: skip
            await worker.hold(item)  # the answer's statement checked the claim: no trip
            assert fences == []
            await worker.hold(item)  # a second send checks it again
            assert fences == [item.id]
            if item.update_id == "late":
                monkeypatch.setattr(replicas, "FRESH_FENCE_SECONDS", 0.0)
                await answers.add_answer(
                    session.id, "again", kind="normal", inbox_id=item.id, trace=Trace(),
                    now=2.0, user_id="u",
                )  # fmt: skip
                await worker.hold(item)  # too long after the answer: checked
                assert fences == [item.id, item.id]
            done.append(item.update_id)

        worker.handlers["telegram"] = handler
        await worker.start()
        try:
            for update in ("soon", "late"):
                fences.clear()
                item = await store.inbox_add("telegram", update, update, "{}")
                assert item is not None
                worker.submit(item)
                await until(lambda u=update: u in done)  # type: ignore[misc]
        finally:
            await worker.stop()
        assert done == ["soon", "late"]
