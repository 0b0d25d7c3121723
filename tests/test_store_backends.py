"""The store's contract, run on SQLite and on a real PostgreSQL server."""

from __future__ import annotations

from gateway.store import Store


async def test_inbox_dedupes_and_keeps_arrival_order(any_store: Store) -> None:
    first = await any_store.inbox_add("telegram", "1", "chat-a", "{}", now=10.0)
    assert first is not None and first.received_at == 10.0
    assert await any_store.inbox_add("telegram", "1", "chat-a", "{}") is None
    second = await any_store.inbox_add("telegram", "2", "chat-b", "{}")
    assert second is not None and second.id > first.id
    assert [i.update_id for i in await any_store.inbox_pending()] == ["1", "2"]
    assert await any_store.inbox_failed(first.id, "boom") == 1
    assert await any_store.inbox_failed(first.id, "boom again") == 2
    await any_store.inbox_done(first.id)
    assert [i.update_id for i in await any_store.inbox_pending()] == ["2"]
    assert await any_store.inbox_pending_count() == 1
    assert await any_store.inbox_prune(older_than=11.0) == 1
    assert await any_store.inbox_prune(older_than=11.0) == 0


async def test_schema_versions_match(any_store: Store) -> None:
    from gateway.store.migrations import MIGRATIONS
    from gateway.store.postgres.migrations import MIGRATIONS as PG_MIGRATIONS

    assert [v for v, _, _ in MIGRATIONS] == [v for v, _, _ in PG_MIGRATIONS]
    assert await any_store.schema_versions() == [v for v, _, _ in MIGRATIONS]
    assert await any_store.ping()
