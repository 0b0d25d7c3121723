"""SQLite group commit: units queued together commit together, and each keeps its own outcome."""

from __future__ import annotations

import asyncio
import functools
import sqlite3
import threading
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from gateway.errors import StoreError
from gateway.store import SqliteStore
from gateway.store.sql import Conn, query, transaction


class Probe(SqliteStore):
    """A store with a few units of work of its own, written like the real ones."""

    @query
    async def note(self, c: Conn, chat: str, text: str) -> int:
        return int(await c.fetchval("insert into notes values (?, ?) returning rowid", chat, text))

    @transaction
    async def note_twice_then_fail(self, c: Conn, chat: str) -> None:
        await c.execute("insert into notes values (?, 'one')", chat)
        await c.execute("insert into notes values (?, 'two')", chat)
        raise ValueError("refused after writing")

    @query
    async def note_duplicate(self, c: Conn, chat: str) -> None:
        await c.execute("insert into notes values (?, 'first')", chat)
        await c.execute("insert into notes values (?, 'first')", chat)  # unique: fails

    @query
    async def end_the_transaction(self, c: Conn, chat: str) -> None:
        """A unit whose statement ends whatever transaction it runs in."""
        await c.execute("insert into notes values (?, 'gone')", chat)
        await c.execute("rollback")


async def opened(path: Path) -> Probe:
    store = Probe(path)
    await store.open()
    await store.run(
        lambda db: db.execute("create table notes (chat text, text text, unique (chat, text))")
    )
    return store


async def queued_together(store: Probe, calls: Sequence[Callable[[], Awaitable[Any]]]) -> list[Any]:
    """Run `calls` so that they all wait in the store's queue at once, then release them."""
    release = threading.Event()
    gate = asyncio.ensure_future(store.run(lambda db: release.wait(10)))
    started = 0

    async def call(make: Callable[[], Awaitable[Any]]) -> Any:
        nonlocal started
        started += 1  # the call runs on at once to its first wait: the store's answer
        return await make()

    tasks = [asyncio.ensure_future(call(make)) for make in calls]
    async with asyncio.timeout(5):  # every unit handed to the store, behind the gate
        while started < len(calls) or store._pending:
            await asyncio.sleep(0)
    release.set()
    await gate
    return await asyncio.gather(*tasks, return_exceptions=True)


def committed(path: Path) -> set[tuple[str, str]]:
    """What another connection reads from the file: only what was committed."""
    with sqlite3.connect(path) as other:
        return set(other.execute("select chat, text from notes"))


async def commits_during(
    store: Probe, calls: Sequence[Callable[[], Awaitable[Any]]]
) -> tuple[list[Any], int]:
    statements: list[str] = []
    await store.run(lambda db: db.conn.set_trace_callback(statements.append))
    outcomes = await queued_together(store, calls)
    await store.run(lambda db: db.conn.set_trace_callback(None))
    return outcomes, sum(1 for s in statements if s.strip().lower() == "commit")


async def test_concurrent_chats_writes_commit_in_one_transaction_and_are_all_durable(
    tmp_path: Path,
) -> None:
    store = await opened(tmp_path / "db.sqlite")
    try:
        calls = [functools.partial(store.note, f"chat-{i}", f"message {i}") for i in range(20)]
        outcomes, commits = await commits_during(store, calls)
        assert all(isinstance(rowid, int) for rowid in outcomes)
        assert commits == 1  # twenty units, one commit
        assert committed(tmp_path / "db.sqlite") == {
            (f"chat-{i}", f"message {i}") for i in range(20)
        }
    finally:
        await store.close()


async def test_a_failing_unit_fails_alone_and_the_others_in_its_group_still_commit(
    tmp_path: Path,
) -> None:
    store = await opened(tmp_path / "db.sqlite")
    try:
        outcomes, commits = await commits_during(
            store,
            [
                lambda: store.note("a", "kept"),
                lambda: store.note_twice_then_fail("b"),
                lambda: store.note_duplicate("c"),
                lambda: store.note("d", "kept"),
            ],
        )
        assert isinstance(outcomes[0], int) and isinstance(outcomes[3], int)
        assert isinstance(outcomes[1], ValueError)
        assert isinstance(outcomes[2], StoreError) and "UNIQUE" in str(outcomes[2])
        assert commits == 1
        # Nothing of the failed units was kept, not even their first statements.
        assert committed(tmp_path / "db.sqlite") == {("a", "kept"), ("d", "kept")}
    finally:
        await store.close()


async def test_a_group_that_cannot_commit_runs_each_unit_again_alone(tmp_path: Path) -> None:
    store = await opened(tmp_path / "db.sqlite")
    try:
        outcomes = await queued_together(
            store,
            [
                lambda: store.note("a", "kept"),
                lambda: store.end_the_transaction("b"),
                lambda: store.note("c", "kept"),
            ],
        )
        # The breaking unit fails on its own; the others are answered only once durable.
        assert isinstance(outcomes[0], int) and isinstance(outcomes[2], int)
        assert isinstance(outcomes[1], StoreError)
        assert committed(tmp_path / "db.sqlite") == {("a", "kept"), ("c", "kept")}
    finally:
        await store.close()


async def test_a_group_held_up_by_another_writer_answers_busy_then_works_again(
    tmp_path: Path,
) -> None:
    path = tmp_path / "db.sqlite"
    store = await opened(path)
    try:
        await store.run(lambda db: db.execute("pragma busy_timeout = 50"))
        other = sqlite3.connect(path, isolation_level=None, timeout=0)
        other.execute("begin immediate")
        try:
            outcomes = await queued_together(
                store, [functools.partial(store.note, f"chat-{i}", "x") for i in range(3)]
            )
            assert all(type(o).__name__ == "StoreBusy" for o in outcomes)
        finally:
            other.execute("rollback")
            other.close()
        assert isinstance(await store.note("chat-0", "x"), int)
        assert committed(path) == {("chat-0", "x")}
    finally:
        await store.close()


async def test_work_queued_before_close_finishes_and_later_work_is_refused(tmp_path: Path) -> None:
    store = await opened(tmp_path / "db.sqlite")
    pending = [asyncio.ensure_future(store.note(f"chat-{i}", "late")) for i in range(5)]
    await asyncio.sleep(0)
    await store.close()
    assert all(isinstance(p.result(), int) for p in pending)
    with pytest.raises(StoreError):
        await store.note("chat-x", "after close")
    assert len(committed(tmp_path / "db.sqlite")) == 5
