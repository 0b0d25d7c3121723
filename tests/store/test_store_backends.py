"""The store's contract, run on SQLite and on a real PostgreSQL server."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from gateway.core.records import ClaimFence, InboxItem, Trace
from gateway.core.turn import QuotaSpend
from gateway.errors import ClaimLost
from gateway.store import SqliteStore, Store
from gateway.store.postgres import numbered
from gateway.store.sql import Conn
from tests.store_support import current_session, history


async def test_inbox_dedupes_and_keeps_arrival_order(any_store: Store) -> None:
    first = await any_store.inbox_add("telegram", "1", "chat-a", "{}", now=10.0)
    assert first is not None and first.received_at == 10.0
    assert await any_store.inbox_add("telegram", "1", "chat-a", "{}") is None
    second = await any_store.inbox_add("telegram", "2", "chat-b", "{}")
    assert second is not None and second.id > first.id
    assert [i.update_id for i in await any_store.inbox_pending()] == ["1", "2"]
    # An attempt is counted before its work starts (the first as the update is stored, for
    # the worker it goes to); a failure only says why.
    assert first.attempts == 1 and first.started
    assert not (await any_store.inbox_pending())[0].started
    assert await any_store.inbox_failed(first.id, "boom") == 1
    assert await any_store.inbox_started(first.id) == 2
    assert await any_store.inbox_failed(first.id, "boom again") == 2
    assert (await any_store.inbox_pending())[0].attempts == 2
    await any_store.inbox_done(first.id)
    assert [i.update_id for i in await any_store.inbox_pending()] == ["2"]
    assert await any_store.inbox_pending_count() == 1
    assert await any_store.inbox_prune(older_than=11.0) == 1
    assert await any_store.inbox_prune(older_than=11.0) == 0


async def test_the_inbox_is_pruned_a_chunk_at_a_time(any_store: Store) -> None:
    for n in range(5):
        item = await any_store.inbox_add("telegram", f"u{n}", "chat-a", "{}", now=float(n))
        assert item is not None
        if n != 1:
            await any_store.inbox_done(item.id)
    waiting = await any_store.inbox_add("telegram", "new", "chat-a", "{}", now=100.0)
    assert waiting is not None
    await any_store.inbox_done(waiting.id)
    # Processed and old: u0, u2, u3, u4 (u1 still waits); two a unit, the oldest first.
    assert await any_store.inbox_prune(older_than=50.0, limit=2) == 2
    assert [i.update_id for i in await any_store.inbox_pending()] == ["u1"]
    assert await any_store.inbox_last_received("telegram") == 100.0
    assert await any_store.inbox_prune(older_than=50.0, limit=2) == 2
    assert await any_store.inbox_prune(older_than=50.0, limit=2) == 0


async def test_schema_versions_match(any_store: Store) -> None:
    from gateway.store.migrations import MIGRATIONS

    assert await any_store.schema_versions() == [v for v, _, _ in MIGRATIONS]
    assert await any_store.ping()


async def _stored(store: Store, *chats: str) -> list[int]:
    ids = []
    for n, chat in enumerate(chats):
        item = await store.inbox_add("telegram", f"u{n}", chat, "{}", now=float(n))
        assert item is not None
        ids.append(item.id)
    return ids


async def test_a_claim_takes_only_the_head_of_each_chat(any_store: Store) -> None:
    a1, b1, a2, b2 = await _stored(any_store, "a", "b", "a", "b")
    got = await any_store.inbox_claim("r1", 30, channels=["telegram"], limit=10, now=100)
    assert [i.id for i in got] == [a1, b1]  # a2 and b2 wait behind their chat's first
    # Nobody else gets them while the lease runs, not even their successors.
    assert await any_store.inbox_claim("r2", 30, channels=["telegram"], limit=10, now=101) == []
    await any_store.inbox_done(a1)
    got = await any_store.inbox_claim("r2", 30, channels=["telegram"], limit=10, now=102)
    assert [i.id for i in got] == [a2]
    assert b2 not in [i.id for i in got]


async def test_an_expired_lease_is_taken_over_and_renewal_keeps_it(any_store: Store) -> None:
    (a1, b1) = await _stored(any_store, "a", "b")
    first = await any_store.inbox_claim("r1", 10, channels=["telegram"], limit=10, now=100)
    claims = [(i.id, i.claim) for i in first]
    assert await any_store.inbox_renew("r1", claims[:1], 10, now=105) == [a1]  # a1 until 115
    got = await any_store.inbox_claim("r2", 10, channels=["telegram"], limit=10, now=111)
    assert [i.id for i in got] == [b1]  # r1's lease on b1 ran out at 110
    assert await any_store.inbox_renew("r1", claims, 10, now=112) == [a1]  # b1 is lost
    await any_store.inbox_done(a1)
    assert await any_store.inbox_renew("r1", claims[:1], 10, now=113) == []


async def test_a_send_is_fenced_by_the_claim_it_was_made_under(any_store: Store) -> None:
    (a1,) = await _stored(any_store, "a")
    (mine,) = await any_store.inbox_claim("r1", 10, channels=["telegram"], limit=1, now=100)
    assert mine.claim == 1
    # The fence holds while the claim does, and extends the lease: nobody takes it at 112.
    assert await any_store.inbox_fence("r1", a1, mine.claim, 10, now=105)
    assert await any_store.inbox_claim("r2", 10, channels=["telegram"], limit=1, now=112) == []
    # r1 stalls past the lease; r2 takes the update over, with the next claim number.
    (theirs,) = await any_store.inbox_claim("r2", 10, channels=["telegram"], limit=1, now=116)
    assert theirs.claim == 2
    # The first claim works on the attempt counted as the update was stored; a takeover
    # counts its own (the work before it may have killed its replica).
    assert mine.started and mine.attempts == 1
    assert not theirs.started
    assert not await any_store.inbox_fence("r1", a1, mine.claim, 10, now=117)
    assert await any_store.inbox_fence("r2", a1, theirs.claim, 10, now=117)
    # The stalled replica's bookkeeping no longer counts either.
    assert await any_store.inbox_started(a1, claim=mine.claim) == 0
    assert await any_store.inbox_failed(a1, "late", claim=mine.claim) == 0
    assert not await any_store.inbox_done(a1, claim=mine.claim)
    assert [i.id for i in await any_store.inbox_pending()] == [a1]
    assert await any_store.inbox_done(a1, claim=theirs.claim)
    assert not await any_store.inbox_fence("r2", a1, theirs.claim, 10, now=118)  # done


async def test_a_claim_lost_and_taken_again_by_the_same_replica_is_a_new_claim(
    any_store: Store,
) -> None:
    (a1,) = await _stored(any_store, "a")
    (old,) = await any_store.inbox_claim("r1", 10, channels=["telegram"], limit=1, now=100)
    (new,) = await any_store.inbox_claim("r1", 10, channels=["telegram"], limit=1, now=111)
    assert not await any_store.inbox_fence("r1", a1, old.claim, 10, now=112)
    assert await any_store.inbox_renew("r1", [(a1, old.claim)], 10, now=112) == []
    assert await any_store.inbox_renew("r1", [(a1, new.claim)], 10, now=112) == [a1]


async def test_released_claims_are_free_at_once(any_store: Store) -> None:
    (a1,) = await _stored(any_store, "a")
    await any_store.inbox_claim("r1", 60, channels=["telegram"], limit=10, now=100)
    assert await any_store.inbox_release("r1") == 1
    got = await any_store.inbox_claim("r2", 60, channels=["telegram"], limit=10, now=101)
    assert [i.id for i in got] == [a1]


async def test_claims_are_limited_to_the_replicas_channels(any_store: Store) -> None:
    await any_store.inbox_add("line", "e1", "a", "{}")
    assert await any_store.inbox_claim("r1", 60, channels=["telegram"], limit=5) == []
    assert len(await any_store.inbox_claim("r1", 60, channels=["line"], limit=5)) == 1


async def test_the_registry_fingerprint_changes_with_any_row(any_store: Store) -> None:
    from gateway.core.records import SkillRecord

    empty = await any_store.skills_fingerprint()
    record = SkillRecord(
        slug="tone", source="custom", content_hash="h1", created_at=1.0, updated_at=1.0
    )
    await any_store.put_skill_records([record])
    first = await any_store.skills_fingerprint()
    assert first != empty and first == await any_store.skills_fingerprint()
    await any_store.put_skill_records([record.model_copy(update={"enabled": False})])
    assert await any_store.skills_fingerprint() not in (empty, first)


async def test_concurrent_claims_never_share_an_update(postgres_url: str) -> None:
    """Many replicas claiming at once on a real server: each update goes to exactly one,
    every update is done once, and each chat's updates in order."""
    from gateway.store.postgres import PostgresStore

    replicas = [await PostgresStore(postgres_url).open() for _ in range(4)]
    try:
        for n in range(200):
            await replicas[0].inbox_add("telegram", f"u{n}", f"chat{n % 50}", "{}")
        claimed: dict[int, str] = {}
        order: dict[str, list[int]] = {}

        def take(name: str, items: list[InboxItem]) -> None:
            for item in items:
                assert item.id not in claimed, f"{item.id} claimed by {claimed[item.id]} too"
                claimed[item.id] = name
                order.setdefault(item.chat_key, []).append(item.id)

        async def claim(n: int) -> list[InboxItem]:
            return await replicas[n].inbox_claim(f"r{n}", 30, channels=["telegram"], limit=7)

        # Each replica in turn while the others still hold theirs: the work is shared, by
        # construction rather than by how the machine schedules four tasks.
        held = [await claim(n) for n in range(len(replicas))]
        assert [len(h) for h in held] == [7, 7, 7, 7]  # each its limit, no more
        for n, items in enumerate(held):
            take(f"r{n}", items)
        for item in (i for items in held for i in items):
            await replicas[0].inbox_done(item.id)
        # Then all at once, round after round, until nothing is left.
        for _ in range(200):
            rounds = await asyncio.gather(*(claim(n) for n in range(len(replicas))))
            if not any(rounds):
                break
            for n, items in enumerate(rounds):
                take(f"r{n}", items)
            await asyncio.gather(
                *(replicas[n].inbox_done(i.id) for n, items in enumerate(rounds) for i in items)
            )
        assert await replicas[0].inbox_pending_count() == 0
        assert len(claimed) == 200  # every update once: none twice (take), none left
        for ids in order.values():
            assert ids == sorted(ids)
    finally:
        for store in replicas:
            await store.close()


async def test_more_units_at_once_than_connections_all_finish(postgres_url: str) -> None:
    """Units queued for a connection get one as others end (none is kept from them)."""
    from gateway.store.postgres import PostgresStore

    async with PostgresStore(postgres_url, max_size=2) as store:
        adds = [store.inbox_add("telegram", str(n), f"chat-{n % 3}", "{}") for n in range(30)]
        # The guard only turns a hang into a failure: the work takes milliseconds.
        stored = await asyncio.wait_for(asyncio.gather(*adds), 60)
        assert all(item is not None for item in stored)
        assert await store.inbox_pending_count() == 30


async def test_a_call_cancelled_while_waiting_for_a_connection_takes_none_with_it(
    postgres_url: str,
) -> None:
    """With every connection out, the calls that wait get one as others end, in order; one
    cancelled while waiting (or just as it was handed one) leaves it to the next."""
    from gateway.store.postgres import PostgresStore

    async with PostgresStore(postgres_url, max_size=1) as store:
        async with store.connection():  # the pool's only connection is out
            gone = asyncio.ensure_future(store.inbox_add("telegram", "1", "chat-a", "{}"))
            handed = asyncio.ensure_future(store.inbox_add("telegram", "2", "chat-a", "{}"))
            after = asyncio.ensure_future(store.inbox_add("telegram", "3", "chat-a", "{}"))
            await asyncio.sleep(0)  # each of them runs up to its wait for a connection
            gone.cancel()
        handed.cancel()  # it was handed the connection, and is cancelled before it ran
        # The guard only turns a hang into a failure: the work takes milliseconds.
        stored = await asyncio.wait_for(after, 60)
        assert stored is not None and stored.update_id == "3"
        for cancelled in (gone, handed):
            with pytest.raises(asyncio.CancelledError):
                await cancelled
        assert [i.update_id for i in await store.inbox_pending()] == ["3"]
        assert await asyncio.wait_for(store.inbox_pending_count(), 60) == 1


async def test_a_connection_the_server_dropped_is_replaced(postgres_url: str) -> None:
    """A server that ends the store's connection (a restart, a failover) fails at most the
    call in flight, as busy (worth retrying); the calls after it get a new connection."""
    import asyncpg

    from gateway.errors import StoreBusy
    from gateway.store.postgres import PostgresStore

    async with PostgresStore(postgres_url, max_size=1) as store:
        first = await store.inbox_add("telegram", "1", "chat-a", "{}")
        assert first is not None
        async with store.connection() as conn:
            pid = conn.get_server_pid()
        admin = await asyncpg.connect(postgres_url)
        try:
            assert await admin.fetchval("select pg_terminate_backend($1)", pid)
        finally:
            await admin.close()
        try:
            await store.inbox_done(first.id)
        except StoreBusy:
            await store.inbox_done(first.id)
        assert await store.inbox_pending() == []
        assert await store.inbox_add("telegram", "2", "chat-a", "{}") is not None
        async with store.connection() as conn:
            assert conn.get_server_pid() != pid


async def test_a_transaction_that_fails_midway_leaves_nothing(any_store: Store) -> None:
    async def half(c: Conn) -> None:
        await c.execute("insert into meta (key, value) values (?, ?)", "half", "written")
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        await any_store._run(half, transaction=True)
    assert await any_store.get_meta("half") is None
    await any_store.set_meta("after", "ok")  # the connection is usable again
    assert await any_store.get_meta("after") == "ok"


def test_question_marks_are_numbered_outside_string_literals() -> None:
    sql = "select '?' as a, ? as b, 'it''s ?' as c from t where x = ? and y = '??'"
    assert (
        numbered(sql) == "select '?' as a, $1 as b, 'it''s ?' as c from t where x = $2 and y = '??'"
    )


async def test_a_sqlite_unit_of_work_that_awaits_anything_else_is_refused(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "db.sqlite") as store:

        async def suspends(c: Conn) -> None:
            await asyncio.sleep(0)  # would let another unit in between its statements

        with pytest.raises(RuntimeError, match="awaited something other than"):
            await store._run(suspends, transaction=True)
        assert await store.ping()


async def test_an_answer_stored_under_a_claim_checks_it_in_the_same_unit(any_store: Store) -> None:
    (a1,) = await _stored(any_store, "a")
    (mine,) = await any_store.inbox_claim("r1", 10, channels=["telegram"], limit=1)
    session = await current_session(any_store, "telegram", "a", "u", 1000.0, 60)
    fence = ClaimFence("r1", a1, mine.claim, 10)
    kept = await any_store.add_answer(
        session.id, "one", kind="normal", inbox_id=a1, trace=Trace(), now=1.0, user_id="u",
        fence=fence,
    )  # fmt: skip
    assert kept.text == "one"
    # Held, the lease was extended as the fence before a send extends it.
    assert await any_store.inbox_claim("r2", 10, channels=["telegram"], limit=1) == []
    # Taken over meanwhile: the answer is stored all the same (the new holder sends it), and
    # the claim's loss is said, with or without the daily counts' transaction.
    await any_store.inbox_release("r1")
    (theirs,) = await any_store.inbox_claim("r2", 10, channels=["telegram"], limit=1)
    spent = QuotaSpend(day="2026-12-07", tokens=1)
    for extra in ({}, {"spent": spent}):
        with pytest.raises(ClaimLost):
            await any_store.add_answer(
                session.id, "two", kind="normal", inbox_id=a1, trace=Trace(), now=2.0,
                user_id="u", fence=fence, **extra,  # type: ignore[arg-type]
            )  # fmt: skip
    texts = [m.text for m in await history(any_store, session.id, limit=10)]
    assert texts == ["one", "two", "two"]
    assert await any_store.inbox_fence("r2", a1, theirs.claim, 10)


async def test_the_last_update_of_a_channel_is_found_near_the_newest_and_far_from_them(
    any_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gateway.store import inbox

    monkeypatch.setattr(inbox, "LAST_RECEIVED_PROBE", 3)
    assert await any_store.inbox_last_received("telegram") is None
    await any_store.inbox_add("line", "l0", "chat-l", "{}", now=5.0)
    for n in range(1, 4):
        await any_store.inbox_add("telegram", f"t{n}", "chat-t", "{}", now=10.0 + n)
    # Among the newest rows, and (LINE) only further back than the probe reads.
    assert await any_store.inbox_last_received("telegram") == 13.0
    assert await any_store.inbox_last_received("line") == 5.0
    await any_store.inbox_add("line", "l1", "chat-l", "{}", now=20.0)
    assert await any_store.inbox_last_received("line") == 20.0
    assert await any_store.inbox_last_received("telegram") == 13.0
    assert await any_store.inbox_last_received("slack") is None
