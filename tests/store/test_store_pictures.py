"""Pictures made on request in the store, on SQLite and PostgreSQL alike: how many each
answer had made, counted per user and day, and gone with /forget."""

from __future__ import annotations

from gateway.core.records import Trace
from gateway.store import Store
from tests.store_support import add_message, current_session


async def test_pictures_are_counted_per_user_and_day_and_go_with_forget(any_store: Store) -> None:
    session = await current_session(any_store, "telegram", "7", "7", 1000.0, 60)
    first = await add_message(
        any_store, session.id, "assistant", "a", trace=Trace(), now=1000.0, user_id="7"
    )
    second = await add_message(
        any_store, session.id, "assistant", "b", trace=Trace(), now=2000.0, user_id="7"
    )
    await any_store.record_pictures(first.id, 2)
    await any_store.record_pictures(second.id, 1)
    assert await any_store.pictured_by("telegram", "7", 0.0) == 3
    assert await any_store.pictured_by("telegram", "7", 1500.0) == 1
    assert await any_store.pictured_by("line", "7", 0.0) == 0
    await any_store.forget_user("telegram", "7", 3000.0)
    assert await any_store.pictured_by("telegram", "7", 0.0) == 0
