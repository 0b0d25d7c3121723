"""Memory and group context in the store, on SQLite and PostgreSQL alike."""

from __future__ import annotations

from gateway.core.records import GroupLine
from gateway.store import Store
from tests.store_support import open_turn

LIMITS = {"now": 1000.0, "idle_seconds": 600.0, "history_limit": 20}


async def test_memory_is_bounded_oldest_first_and_read_by_its_owner_in_the_turn(
    any_store: Store,
) -> None:
    for n, text in enumerate(("a" * 600, "b" * 600, "c" * 600)):
        _, dropped = await any_store.remember("line", "U1", text, limit_chars=1500, now=n)
    assert dropped == 1
    assert [e.text[0] for e in await any_store.memory_entries("line", "U1")] == ["b", "c"]
    turn = await open_turn(
        any_store, "line", "U1", "U1", "hi", inbox_id=None, memory=True, **LIMITS
    )
    assert turn.memory is not None and [m[0] for m in turn.memory] == ["b", "c"]
    group = {"inbox_id": None, "memory": True, "in_group": True, **LIMITS}
    assert (await open_turn(any_store, "line", "C1", "U1", "hi", **group)).memory is None
    await any_store.set_memory_opt_in("line", "C1", "U1", True, 5.0)
    await any_store.set_memory_opt_in("line", "C1", "U1", True, 6.0)  # twice is once
    assert (await open_turn(any_store, "line", "C1", "U1", "hi", **group)).memory is not None
    assert (await open_turn(any_store, "line", "C1", "U2", "hi", **group)).memory is None
    assert (await open_turn(any_store, "telegram", "U1", "U1", "hi", **group)).memory is None
    entries = await any_store.memory_entries("line", "U1")
    assert await any_store.forget_memory("line", "U1", [entries[0].id]) == 1
    assert await any_store.forget_memory("line", "U1") == 1


async def test_group_lines_are_bounded_as_kept_and_taken_once(any_store: Store) -> None:
    for n in range(8):
        await any_store.keep_group_line(
            "telegram",
            "-1",
            GroupLine(user_id=str(n % 2), user_name="Ann", text=f"line {n}"),
            tokens=10,
            now=100.0 + n,
            max_lines=5,
            max_tokens=40,
            since=0.0,
        )
    turn = await open_turn(
        any_store, "telegram", "-1", "0", "q", inbox_id=None, context_since=104.5, **LIMITS
    )
    assert [line.text for line in turn.context] == ["line 5", "line 6", "line 7"]
    again = await open_turn(
        any_store, "telegram", "-1", "0", "q", inbox_id=None, context_since=0.0, **LIMITS
    )
    assert again.context == []


async def test_retention_deletes_memory_and_group_lines_older_than_its_cutoff(
    any_store: Store,
) -> None:
    await any_store.remember("telegram", "7", "old", limit_chars=1500, now=10.0)
    await any_store.remember("telegram", "7", "new", limit_chars=1500, now=500.0)
    for at, text in ((10.0, "old line"), (500.0, "new line")):
        await any_store.keep_group_line(
            "telegram",
            "-1",
            GroupLine(user_id="7", text=text),
            tokens=3,
            now=at,
            max_lines=10,
            max_tokens=100,
            since=0.0,
        )
    await any_store.delete_old_sessions(100.0, 600.0)
    assert [e.text for e in await any_store.memory_entries("telegram", "7")] == ["new"]
    turn = await open_turn(
        any_store, "telegram", "-1", "7", "q", inbox_id=None, context_since=0.0, **LIMITS
    )
    assert [line.text for line in turn.context] == ["new line"]
