"""The store: migrations, WAL, one worker thread, dedupe, sessions and feedback."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from gateway.errors import StoreError
from gateway.store import SqliteStore
from gateway.store.migrations import MIGRATIONS
from gateway.store.sql import Conn
from gateway.store.sqlite import migrate
from tests.store_support import add_message, current_session, open_turn


async def test_a_fresh_database_gets_every_migration_once(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "db.sqlite") as store:
        assert await store.schema_versions() == [v for v, _, _ in MIGRATIONS]
        tables = await store.run(lambda db: set(db.table_names()))
        assert {"inbox", "sessions", "messages", "traces", "feedback", "skills", "meta"} <= tables
        assert await store.run(lambda db: db.journal_mode) == "wal"
    async with SqliteStore(tmp_path / "db.sqlite") as store:  # reopening applies nothing new
        assert await store.schema_versions() == [v for v, _, _ in MIGRATIONS]


def test_a_failing_migration_leaves_no_trace(tmp_path: Path) -> None:
    from sqlite_utils import Database

    db = Database(tmp_path / "db.sqlite")

    async def broken(c: Conn) -> None:
        await c.execute("create table half (x integer)")
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        migrate(db, [(1, "broken", [broken])])
    assert "half" not in db.table_names()
    assert "schema_migrations" not in db.table_names()  # nor any record of a version


async def test_every_call_runs_on_the_one_store_thread(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "db.sqlite") as store:
        names = {await store.run(lambda db: threading.current_thread().name) for _ in range(5)}
        assert len(names) == 1 and next(iter(names)).startswith("store")
        assert threading.current_thread().name not in names


async def test_sql_errors_become_store_errors(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "db.sqlite") as store:
        with pytest.raises(StoreError):
            await store.run(lambda db: db.execute("select * from no_such_table"))


async def test_an_update_is_stored_once_per_platform_id(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "db.sqlite") as store:
        first = await store.inbox_add("telegram", "42", "chat", "{}")
        again = await store.inbox_add("telegram", "42", "chat", "{}")
        other = await store.inbox_add("line", "42", "chat", "{}")
        assert first is not None and again is None and other is not None
        assert [i.id for i in await store.inbox_pending()] == [first.id, other.id]
        await store.inbox_done(first.id)
        assert [i.id for i in await store.inbox_pending()] == [other.id]


async def test_a_retried_turn_stores_the_message_once_and_an_answered_one_writes_nothing(
    tmp_path: Path,
) -> None:
    async with SqliteStore(tmp_path / "db.sqlite") as store:
        item = await store.inbox_add("telegram", "1", "c", "{}")
        assert item is not None
        args = ("telegram", "c", "u", "hello")
        limits = {"now": 1000.0, "idle_seconds": 60, "history_limit": 10}
        first = await open_turn(store, *args, inbox_id=item.id, **limits)
        again = await open_turn(store, *args, inbox_id=item.id, **limits)  # crashed mid-turn
        assert [m.text for m in again.history] == ["hello"]
        assert again.session_id == first.session_id and again.answer is None
        answer = await add_message(store, first.session_id, "assistant", "hi", inbox_id=item.id)
        done = await open_turn(store, *args, inbox_id=item.id, **limits)
        assert done.answer == answer
        count = await store.run(lambda db: db.execute("select count(*) from messages").fetchone())
        assert count[0] == 2


async def test_a_second_rating_changes_the_first_and_a_comment_attaches(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "db.sqlite") as store:
        session = await current_session(store, "telegram", "c", "u", 1000.0, 60)
        answer = await add_message(store, session.id, "assistant", "hi")
        await store.set_feedback(answer.id, "u", 1)
        await store.set_feedback(answer.id, "u", -1)
        assert await store.set_feedback_comment(answer.id, "u", "too vague")
        (row,) = await store.list_feedback()
        assert (row.rating, row.comment, row.channel, row.chat_id) == (
            -1,
            "too vague",
            "telegram",
            "c",
        )
        assert await store.set_feedback(999, "u", 1) is None  # no such answer
        user_msg = await add_message(store, session.id, "user", "q")
        assert await store.set_feedback(user_msg.id, "u", 1) is None  # only answers are rated


async def test_a_locked_database_is_reported_not_hung(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    async with SqliteStore(path, busy_timeout=0.2) as store:
        other = sqlite3.connect(path)
        other.execute("begin exclusive")
        try:
            with pytest.raises(StoreError, match="locked"):
                await store.inbox_add("telegram", "1", "c", "{}")
        finally:
            other.rollback()
            other.close()
        assert await store.inbox_add("telegram", "1", "c", "{}") is not None


async def test_an_awaited_answer_is_taken_once_and_expires(tmp_path: Path) -> None:
    from gateway.core.records import Awaiting

    async with SqliteStore(tmp_path / "db.sqlite") as store:
        q = Awaiting(
            channel="telegram",
            chat_id="c",
            user_id="u",
            purpose="feedback_comment",
            ref="7",
            expires_at=1100.0,
            created_at=1000.0,
        )
        await store.set_awaiting(q)
        assert await store.peek_awaiting("telegram", "c", "u", now=1050) == q
        assert await store.take_awaiting("telegram", "c", "u", now=1050) == q
        assert await store.take_awaiting("telegram", "c", "u", now=1050) is None
        await store.set_awaiting(q)
        assert await store.take_awaiting("telegram", "c", "u", now=1200) is None  # expired
        assert await store.peek_awaiting("telegram", "c", "u", now=1050) is None  # and gone
