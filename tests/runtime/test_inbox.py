"""Stored updates: answered once, in order per chat, resumed after a crash."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from aiohttp import web

from gateway.app import PARTS, build_app
from gateway.config import Settings
from gateway.core.records import InboxItem
from gateway.store import SqliteStore
from tests.fakes.channel import FakeChannel
from tests.fakes.openai_server import FakeOpenAI
from tests.store_support import add_message, current_session


async def running(settings: Settings, channel: FakeChannel) -> web.AppRunner:
    runner = web.AppRunner(build_app(settings, channels=[channel]))
    await runner.setup()  # runs the cleanup contexts' start-up half
    return runner


async def test_the_same_update_twice_is_answered_once(
    settings: Settings, fake_llm: FakeOpenAI
) -> None:
    channel = FakeChannel(settings)
    runner = await running(settings, channel)
    try:
        assert await channel.accept("1", "chat-a", "hello")
        assert not await channel.accept("1", "chat-a", "hello")
        await runner.app[PARTS].worker.wait_idle(5)
    finally:
        await runner.cleanup()
    assert channel.texts() == ["Hello from the fake model."]
    assert len(fake_llm.requests) == 1


async def test_messages_of_one_chat_are_answered_in_order_while_chats_run_concurrently(
    settings: Settings, fake_llm: FakeOpenAI
) -> None:
    started: list[str] = []

    def answer(body: dict[str, object]) -> str:
        text = body["messages"][-1]["content"]  # type: ignore[index]
        started.append(str(text))
        return f"re: {text}"

    fake_llm.default = answer
    channel = FakeChannel(settings)
    runner = await running(settings, channel)
    try:
        for i in range(5):
            await channel.accept(f"a{i}", "chat-a", f"a{i}")
            await channel.accept(f"b{i}", "chat-b", f"b{i}")
        await runner.app[PARTS].worker.wait_idle(10)
    finally:
        await runner.cleanup()
    assert channel.texts("chat-a") == [f"re: a{i}" for i in range(5)]
    assert channel.texts("chat-b") == [f"re: b{i}" for i in range(5)]
    # both chats were in flight together: b0 started before a4 finished
    assert started.index("b0") < started.index("a4")


async def test_updates_stored_before_a_crash_are_answered_exactly_once_after_restart(
    settings: Settings, fake_llm: FakeOpenAI
) -> None:
    # The previous process stored three updates and died: one untouched, one whose
    # answer was made but not delivered, one delivered but not marked processed.
    async with SqliteStore(settings.db_path) as store:
        for n in ("1", "2", "3"):
            payload = json.dumps({"chat": f"c{n}", "user": "u", "text": f"q{n}"})
            await store.inbox_add("fake", n, f"c{n}", payload)
        s2 = await current_session(store, "fake", "c2", "u", 1.0e9, 1e9)
        await add_message(store, s2.id, "user", "q2", inbox_id=2)
        await add_message(store, s2.id, "assistant", "made before crash", inbox_id=2)
        s3 = await current_session(store, "fake", "c3", "u", 1.0e9, 1e9)
        await add_message(store, s3.id, "user", "q3", inbox_id=3)
        done = await add_message(store, s3.id, "assistant", "sent before crash", inbox_id=3)
        await store.set_platform_ids(done.id, ["fake-old"])

    channel = FakeChannel(settings)
    runner = await running(settings, channel)
    try:
        await runner.app[PARTS].worker.wait_idle(5)
    finally:
        await runner.cleanup()
    assert sorted(channel.texts()) == ["Hello from the fake model.", "made before crash"]
    assert len(fake_llm.requests) == 1  # only the untouched update needed the model
    async with SqliteStore(settings.db_path) as store:
        assert await store.inbox_pending() == []

    again = FakeChannel(settings)  # a second restart answers nothing more
    runner = await running(settings, again)
    await runner.cleanup()
    assert again.sent == []


async def test_a_failing_send_is_retried_and_then_delivered_once(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = make_settings(llm_base_url=fake_llm.base_url, llm_model="fake-model")
    channel = FakeChannel(settings)
    channel.fail_sends = 2
    runner = await running(settings, channel)
    runner.app[PARTS].worker.backoff = lambda attempt: 0.01
    try:
        await channel.accept("1", "chat-a", "hello")
        await runner.app[PARTS].worker.wait_idle(5)
    finally:
        await runner.cleanup()
    assert channel.texts() == ["Hello from the fake model."]
    assert len(fake_llm.requests) == 1  # the stored answer was reused, not asked again


async def test_an_update_that_keeps_failing_is_set_aside_without_blocking_its_chat(
    settings: Settings, fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    channel = FakeChannel(settings)
    channel.fail_sends = 100
    runner = await running(settings, channel)
    worker = runner.app[PARTS].worker
    worker.backoff = lambda attempt: 0.0
    try:
        await channel.accept("1", "chat-a", "doomed")
        await worker.wait_idle(5)
        channel.fail_sends = 0
        await channel.accept("2", "chat-a", "next")
        await worker.wait_idle(5)
    finally:
        await runner.cleanup()
    assert len(channel.sent) == 1
    async with SqliteStore(settings.db_path) as store:
        assert await store.inbox_pending() == []
        row = await store.run(
            lambda db: dict(next(db.query("select * from inbox where update_id = '1'")))
        )
        assert row["attempts"] == worker.max_attempts
        assert "gave up" in row["last_error"]


async def test_an_update_queued_twice_at_start_up_is_processed_once(settings: Settings) -> None:
    # Polling can store and queue an update while `start` reads the same row back.
    channel = FakeChannel(settings)
    runner = await running(settings, channel)
    try:
        parts = runner.app[PARTS]
        handled: list[int] = []

        async def counting(item: InboxItem) -> None:
            handled.append(item.id)
            await channel.process(item)

        parts.worker.handlers["fake"] = counting
        payload = json.dumps({"chat": "c1", "user": "u", "text": "once"})
        item = await parts.store.inbox_add("fake", "1", "c1", payload)
        assert item is not None
        parts.worker.submit(item)
        parts.worker.submit(item)
        await parts.worker.wait_idle(5)
    finally:
        await runner.cleanup()
    assert handled == [item.id]
    assert len(channel.sent) == 1


async def test_processed_updates_older_than_the_retention_are_pruned_at_start(
    settings: Settings, fake_llm: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gateway.runtime import inbox

    monkeypatch.setattr(inbox, "PRUNE_CHUNK", 2)  # pruned a chunk per unit of work
    now = time.time()
    async with SqliteStore(settings.db_path) as store:
        olds = [(f"older-{n}", 8 + n) for n in range(4)]
        for update_id, age_days in (*olds, ("old", 8), ("recent", 1)):
            item = await store.inbox_add("fake", update_id, "c", "{}", now=now - age_days * 86400)
            assert item is not None
            await store.inbox_done(item.id)
        await store.inbox_add(
            "fake", "waiting", "c", '{"chat": "c", "text": "hi"}', now=now - 9 * 86400
        )

    channel = FakeChannel(settings)
    runner = await running(settings, channel)
    try:
        await runner.app[PARTS].worker.wait_idle(5)
        # The old update is forgotten; a redelivery of the recent one is still recognised.
        assert await channel.accept("old", "c", "hello again")
        assert not await channel.accept("recent", "c", "hello again")
        assert await channel.accept("older-3", "c", "and again")
        await runner.app[PARTS].worker.wait_idle(5)
    finally:
        await runner.cleanup()
    # An unprocessed update is never pruned, however old: it was answered at start.
    assert channel.texts("c")[0] == "Hello from the fake model."
    assert len(channel.sent) == 3


class CountingChannel(FakeChannel):
    """Records how many updates it was handling at once."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.busy = 0
        self.most = 0

    async def process(self, item: InboxItem) -> None:
        self.busy += 1
        self.most = max(self.most, self.busy)
        try:
            await super().process(item)
        finally:
            self.busy -= 1


async def test_no_more_chats_are_answered_at_once_than_configured(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.stall(0.2, times=6)  # every answer takes a while, as a real model's does
    settings = make_settings(
        llm_base_url=fake_llm.base_url, llm_model="fake-model", max_concurrent_answers=2
    )
    channel = CountingChannel(settings)
    runner = await running(settings, channel)
    try:
        for i in range(6):
            await channel.accept(str(i), f"chat-{i}", "hello")
        await runner.app[PARTS].worker.wait_idle(10)
    finally:
        await runner.cleanup()
    assert len(channel.sent) == 6
    assert channel.most == 2
