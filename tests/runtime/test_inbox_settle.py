"""An answer's ids after its last message go with the update's done, and are never lost:
written first when the attempt ends any other way, and at once outside an attempt."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from gateway.core.records import InboxItem, Trace
from gateway.runtime.assembly import Deliveries
from gateway.runtime.inbox import InboxWorker
from gateway.store import Store
from tests.store_support import add_message, current_session


async def stored_answer(store: Store, chat: str) -> tuple[InboxItem, int]:
    item = await store.inbox_add("fake", chat, chat, "{}")
    assert item is not None
    session = await current_session(store, "fake", chat, "u", 1000.0, 60)
    answer = await add_message(
        store, session.id, "assistant", "hi", inbox_id=item.id, trace=Trace()
    )
    return item, answer.id


async def platform_ids(store: Store, message_id: int) -> list[str]:
    message = await store.get_message(message_id)
    assert message is not None
    return message.platform_message_ids


def spy_writes(store: Store, monkeypatch: pytest.MonkeyPatch) -> list[Sequence[str]]:
    """The writes of ids made on their own (not with a done)."""
    writes: list[Sequence[str]] = []
    write = store.set_platform_ids

    async def counted(message_id: int, ids: Sequence[str]) -> None:
        writes.append(list(ids))
        await write(message_id, ids)

    monkeypatch.setattr(store, "set_platform_ids", counted)
    return writes


async def test_the_last_ids_are_written_with_the_done(
    any_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    item, answer = await stored_answer(any_store, "a")
    writes = spy_writes(any_store, monkeypatch)
    deliveries = Deliveries(any_store)
    worker = InboxWorker(any_store)

    async def handler(_item: InboxItem) -> None:
        await deliveries.set_platform_ids(answer, ["1"])  # a part before the last: at once
        await deliveries.settle_platform_ids(answer, ["1", "2"])

    worker.handlers["fake"] = handler
    await worker.start()
    worker.submit(item)
    await worker.wait_idle(5)
    await worker.stop()
    assert writes == [["1"]]
    assert await platform_ids(any_store, answer) == ["1", "2"]
    assert await any_store.inbox_pending() == []


async def test_an_attempt_that_fails_after_the_last_message_writes_its_ids_first(
    any_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    item, answer = await stored_answer(any_store, "b")
    writes = spy_writes(any_store, monkeypatch)
    deliveries = Deliveries(any_store)
    worker = InboxWorker(any_store, backoff=lambda attempt: 0.01)
    seen: list[list[str]] = []

    async def handler(_item: InboxItem) -> None:
        seen.append(await platform_ids(any_store, answer))  # what a retry finds sent
        if not seen[-1]:
            await deliveries.settle_platform_ids(answer, ["7"])
            raise RuntimeError("a notice after the answer failed")

    worker.handlers["fake"] = handler
    await worker.start()
    worker.submit(item)
    await worker.wait_idle(5)
    await worker.stop()
    assert seen == [[], ["7"]]  # the retry knows the answer went out: it sends nothing again
    assert writes == [["7"]]
    assert await any_store.inbox_pending() == []


async def test_ids_settled_outside_an_attempt_are_written_at_once(
    any_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    item, answer = await stored_answer(any_store, "c")
    writes = spy_writes(any_store, monkeypatch)
    deliveries = Deliveries(any_store)
    worker = InboxWorker(any_store)
    later: list[asyncio.Task[None]] = []

    async def handler(_item: InboxItem) -> None:
        # A task the attempt starts (its context copied) writes after the attempt is over.
        later.append(asyncio.create_task(deliveries.settle_platform_ids(answer, ["9"])))

    worker.handlers["fake"] = handler
    await worker.start()
    worker.submit(item)
    await worker.wait_idle(5)
    await worker.stop()
    await asyncio.gather(*later)
    await deliveries.settle_platform_ids(answer, ["9", "10"])  # no attempt at all here
    assert writes == [["9"], ["9", "10"]]
    assert await platform_ids(any_store, answer) == ["9", "10"]
