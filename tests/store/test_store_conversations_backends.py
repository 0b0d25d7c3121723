"""Conversations, deliveries, stats and the registry, run on SQLite and on PostgreSQL."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from gateway.core.records import Awaiting, SkillRecord, Trace
from gateway.errors import StoreError
from gateway.store import SqliteStore, Store
from gateway.store.postgres import PostgresStore, numbered
from tests.store_support import add_message, answer_for_inbox, current_session, history, open_turn

LIMITS: dict[str, Any] = {"now": 1000.0, "idle_seconds": 60, "history_limit": 10}


async def rows(store: Store, sql: str, *params: Any) -> list[dict[str, Any]]:
    """Run raw SQL written with `?` marks on either backend (for checks and set-up only)."""
    if isinstance(store, SqliteStore):
        return await store.run(lambda db: list(db.query(sql, list(params))))
    assert isinstance(store, PostgresStore)
    async with store.connection() as conn:
        return [dict(r) for r in await conn.fetch(numbered(sql), *params)]


async def execute(store: Store, sql: str, *params: Any) -> None:
    if isinstance(store, SqliteStore):
        await store.run(lambda db: db.execute(sql, params))
        return
    assert isinstance(store, PostgresStore)
    async with store.connection() as conn:
        await conn.execute(numbered(sql), *params)


# Sessions


async def test_open_sessions_are_counted_until_finished(any_store: Store) -> None:
    assert await any_store.open_session_count() == 0
    await current_session(any_store, "telegram", "c", "u", 1000.0, 60)
    await current_session(any_store, "line", "d", "u", 1000.0, 60)
    assert await any_store.open_session_count() == 2
    assert await any_store.finish_chat_session("telegram", "c", "new", 1001.0)
    assert await any_store.open_session_count() == 1


async def test_a_session_stays_open_while_active_and_rolls_over_when_idle(any_store: Store) -> None:
    first = await current_session(any_store, "telegram", "c", "u", 1000.0, 60)
    assert (first.started_at, first.last_activity_at, first.finished_at) == (1000.0, 1000.0, None)
    same = await current_session(any_store, "telegram", "c", "u", 1060.0, 60)  # exactly idle
    assert same.id == first.id and same.last_activity_at == 1060.0
    assert same.started_at == 1000.0
    other_chat = await current_session(any_store, "telegram", "d", None, 1060.0, 60)
    other_channel = await current_session(any_store, "line", "c", "u", 1060.0, 60)
    assert len({first.id, other_chat.id, other_channel.id}) == 3
    assert other_chat.user_id is None

    fresh = await current_session(any_store, "telegram", "c", "u", 1121.0, 60)
    assert fresh.id > first.id and fresh.started_at == 1121.0
    old = await any_store.get_session(first.id)
    assert old is not None
    assert (old.finished_at, old.finish_reason, old.last_activity_at) == (1121.0, "idle", 1060.0)
    assert await any_store.get_session(fresh.id) == fresh
    assert await any_store.get_session(10**9) is None


async def test_new_finishes_only_the_open_session_of_that_chat(any_store: Store) -> None:
    a = await current_session(any_store, "telegram", "a", "u", 1000.0, 60)
    b = await current_session(any_store, "telegram", "b", "u", 1000.0, 60)
    assert await any_store.finish_chat_session("telegram", "a", now=1010.0)
    assert not await any_store.finish_chat_session("telegram", "a", now=1020.0)  # none open
    assert not await any_store.finish_chat_session("line", "b")
    finished = await any_store.get_session(a.id)
    assert finished is not None and (finished.finished_at, finished.finish_reason) == (
        1010.0,
        "new",
    )
    assert await any_store.finish_chat_session("telegram", "b", "reset", now=1011.5)
    other = await any_store.get_session(b.id)
    assert other is not None and other.finish_reason == "reset"
    again = await current_session(any_store, "telegram", "a", "u", 1012.0, 60)
    assert again.id not in (a.id, b.id) and again.finished_at is None


async def test_idle_sessions_are_finished_and_counted(any_store: Store) -> None:
    quiet = await current_session(any_store, "telegram", "a", "u", 1000.0, 600)
    edge = await current_session(any_store, "telegram", "b", "u", 1100.0, 600)
    busy = await current_session(any_store, "telegram", "c", "u", 1500.0, 600)
    done = await current_session(any_store, "telegram", "d", "u", 900.0, 600)
    await any_store.finish_chat_session("telegram", "d", now=950.0)
    assert await any_store.finish_idle_sessions(1700.0, 600) == 1  # idle > 600 s only
    assert await any_store.finish_idle_sessions(1700.0, 600) == 0
    assert await any_store.finish_idle_sessions(1700.5, 600) == 1  # `edge` is idle now
    states = {s.id: await any_store.get_session(s.id) for s in (quiet, edge, busy, done)}
    assert [(s.finished_at, s.finish_reason) for s in states.values() if s] == [
        (1700.0, "idle"),
        (1700.5, "idle"),
        (None, None),
        (950.0, "new"),
    ]


# Messages and turns


async def test_messages_are_stored_and_history_is_the_latest_oldest_first(any_store: Store) -> None:
    session = await current_session(any_store, "telegram", "c", "u", 1000.0, 60)
    texts = ["q1", "a1", "oops", "q2", "note", "a2"]
    kinds: list[Any] = ["normal", "normal", "error", "normal", "notice", "normal"]
    stored = []
    for i, (text, kind) in enumerate(zip(texts, kinds, strict=True)):
        role: Any = "user" if text.startswith("q") else "assistant"
        stored.append(
            await add_message(any_store, session.id, role, text, kind=kind, now=1000.0 + i)
        )
    assert [m.id for m in stored] == sorted(m.id for m in stored)
    assert stored[2].kind == "error" and stored[0].created_at == 1000.0
    assert stored[0].platform_message_ids == [] and stored[0].inbox_id is None

    shown = await history(any_store, session.id, limit=10)
    assert [m.text for m in shown] == texts
    assert shown == stored
    latest = await history(any_store, session.id, limit=3)
    assert [m.text for m in latest] == ["q2", "note", "a2"]
    normal = await history(any_store, session.id, limit=3, exclude_kinds=["error", "notice"])
    assert [m.text for m in normal] == ["a1", "q2", "a2"]
    assert await history(any_store, session.id, limit=0) == []
    assert [m.text for m in await history(any_store, session.id, limit=-1)] == texts  # no limit
    other = await current_session(any_store, "telegram", "d", "u", 1000.0, 60)
    assert await history(any_store, other.id, limit=10) == []

    assert await any_store.get_message(stored[1].id) == stored[1]
    assert await any_store.get_message(10**9) is None


async def test_a_bad_message_kind_is_refused(any_store: Store) -> None:
    session = await current_session(any_store, "telegram", "c", "u", 1000.0, 60)
    with pytest.raises(StoreError):
        await add_message(any_store, session.id, "user", "x", kind="shout")  # type: ignore[arg-type]
    assert await history(any_store, session.id, limit=10) == []


async def test_platform_ids_are_kept_in_order(any_store: Store) -> None:
    session = await current_session(any_store, "telegram", "c", "u", 1000.0, 60)
    msg = await add_message(any_store, session.id, "assistant", "long answer")
    await any_store.set_platform_ids(msg.id, ["17", "5", "9"])
    found = await any_store.get_message(msg.id)
    assert found is not None and found.platform_message_ids == ["17", "5", "9"]
    (again,) = await history(any_store, session.id, limit=1)
    assert again.platform_message_ids == ["17", "5", "9"]
    await any_store.set_platform_ids(msg.id, ())
    found = await any_store.get_message(msg.id)
    assert found is not None and found.platform_message_ids == []


async def test_an_answer_keeps_its_trace(any_store: Store) -> None:
    session = await current_session(any_store, "telegram", "c", "u", 1000.0, 60)
    trace = Trace(
        skills_offered=["b", "a"],
        skills_loaded=["a"],
        skills_withheld=["c"],
        tools_used=["load_skill", "load_skill"],
        completed=False,
        error="timeout",
        latency_ms=1234,
        prompt_tokens=100,
        completion_tokens=20,
        model="m",
    )
    answer = await add_message(any_store, session.id, "assistant", "hi", trace=trace, now=1001.0)
    assert answer.created_at == 1001.0
    assert await any_store.get_trace(answer.id) == trace
    plain = await add_message(any_store, session.id, "assistant", "ok", trace=Trace())
    assert await any_store.get_trace(plain.id) == Trace()
    untraced = await add_message(any_store, session.id, "user", "q")
    assert await any_store.get_trace(untraced.id) is None
    assert await any_store.get_trace(10**9) is None


async def test_messages_are_found_by_inbox_update_and_role(any_store: Store) -> None:
    session = await current_session(any_store, "telegram", "c", "u", 1000.0, 60)
    assert await any_store.message_for_inbox(7, "user") is None
    assert await answer_for_inbox(any_store, 7) is None
    question = await add_message(any_store, session.id, "user", "q", inbox_id=7)
    first = await add_message(any_store, session.id, "assistant", "a", inbox_id=7)
    last = await add_message(any_store, session.id, "assistant", "b", inbox_id=7)
    await add_message(any_store, session.id, "assistant", "other", inbox_id=8)
    assert await any_store.message_for_inbox(7, "user") == question
    assert await any_store.message_for_inbox(7, "assistant") == last  # the latest one
    assert await answer_for_inbox(any_store, 7) == last
    assert first.id < last.id
    await any_store.set_platform_ids(last.id, ["p1"])
    answer = await answer_for_inbox(any_store, 7)
    assert answer is not None and answer.platform_message_ids == ["p1"]


async def test_a_turn_opens_once_per_update_and_an_answered_one_writes_nothing(
    any_store: Store,
) -> None:
    item = await any_store.inbox_add("telegram", "1", "c", "{}")
    assert item is not None
    args = ("telegram", "c", "u", "hello")
    first = await open_turn(any_store, *args, inbox_id=item.id, **LIMITS)
    assert first.answer is None
    assert [(m.role, m.text, m.inbox_id) for m in first.history] == [("user", "hello", item.id)]
    again = await open_turn(any_store, *args, inbox_id=item.id, **LIMITS)  # crashed mid-turn
    assert again.session_id == first.session_id and again.history == first.history
    answer = await add_message(any_store, first.session_id, "assistant", "hi", inbox_id=item.id)
    done = await open_turn(any_store, *args, inbox_id=item.id, **{**LIMITS, "now": 5000.0})
    assert done.answer == answer and done.session_id == first.session_id and done.history == []
    (count,) = await rows(any_store, "select count(*) as n from messages")
    assert count["n"] == 2
    session = await any_store.get_session(first.session_id)
    assert session is not None and session.finished_at is None  # nothing written, not even idle


async def test_a_turn_resumed_after_an_idle_gap_stays_with_its_question(any_store: Store) -> None:
    item = await any_store.inbox_add("telegram", "1", "c", "{}")
    assert item is not None
    args = ("telegram", "c", "u", "hello")
    first = await open_turn(any_store, *args, inbox_id=item.id, **LIMITS)
    later = {**LIMITS, "now": 5000.0}  # the retry comes long after the session went idle
    again = await open_turn(any_store, *args, inbox_id=item.id, **later)
    assert again.session_id == first.session_id
    assert [m.text for m in again.history] == ["hello"]
    (count,) = await rows(any_store, "select count(*) as n from sessions")
    assert count["n"] == 1


async def test_a_turn_brings_the_history_it_asks_for(any_store: Store) -> None:
    turn = await open_turn(any_store, "line", "c", "u", "q1", inbox_id=None, **LIMITS)
    session_id = turn.session_id
    await add_message(any_store, session_id, "assistant", "sorry", kind="error", now=1001.0)
    await add_message(any_store, session_id, "assistant", "a1", now=1002.0)
    second = await open_turn(
        any_store,
        "line",
        "c",
        "u",
        "q2",
        inbox_id=None,
        now=1010.0,
        idle_seconds=60,
        history_limit=2,
        exclude_kinds=["error"],
    )
    assert second.session_id == session_id
    assert [m.text for m in second.history] == ["a1", "q2"]
    # Without an inbox update the same text is a new message each time.
    third = await open_turn(
        any_store,
        "line",
        "c",
        "u",
        "q2",
        inbox_id=None,
        now=1020.0,
        idle_seconds=60,
        history_limit=10,
    )
    assert [m.text for m in third.history] == ["q1", "sorry", "a1", "q2", "q2"]
    # After an idle gap the turn starts a fresh session with only its own message.
    later = await open_turn(
        any_store,
        "line",
        "c",
        "u",
        "q3",
        inbox_id=None,
        now=2000.0,
        idle_seconds=60,
        history_limit=10,
    )
    assert later.session_id != session_id
    assert [m.text for m in later.history] == ["q3"]
    old = await any_store.get_session(session_id)
    assert old is not None and old.finish_reason == "idle"


# Feedback


async def _answer(store: Store, chat: str = "c") -> int:
    session = await current_session(store, "telegram", chat, "u", 1000.0, 60)
    return (await add_message(store, session.id, "assistant", "hi")).id


async def test_a_second_rating_changes_the_first_and_a_comment_attaches(any_store: Store) -> None:
    answer = await _answer(any_store)
    first = await any_store.set_feedback(answer, "u", 1, now=2000.0)
    assert first is not None
    assert (first.message_id, first.channel, first.chat_id, first.user_id) == (
        answer,
        "telegram",
        "c",
        "u",
    )
    assert (first.rating, first.comment, first.created_at, first.updated_at) == (
        1,
        None,
        2000.0,
        2000.0,
    )
    second = await any_store.set_feedback(answer, "u", -1, now=2100.0)
    assert second is not None and second.id == first.id
    assert (second.rating, second.created_at, second.updated_at) == (-1, 2000.0, 2100.0)
    assert await any_store.set_feedback_comment(answer, "u", "too vague", now=2200.0)
    assert not await any_store.set_feedback_comment(answer, "someone else", "me too")
    (row,) = await any_store.list_feedback()
    assert (row.id, row.rating, row.comment, row.updated_at) == (first.id, -1, "too vague", 2200.0)
    third = await any_store.set_feedback(answer, "u", 1, now=2300.0)
    assert third is not None and third.comment == "too vague"  # a new rating keeps the comment


async def test_only_stored_answers_can_be_rated(any_store: Store) -> None:
    session = await current_session(any_store, "telegram", "c", "u", 1000.0, 60)
    question = await add_message(any_store, session.id, "user", "q")
    assert await any_store.set_feedback(10**9, "u", 1) is None  # no such answer
    assert await any_store.set_feedback(question.id, "u", 1) is None  # only answers are rated
    answer = await add_message(any_store, session.id, "assistant", "a")
    with pytest.raises(StoreError):
        await any_store.set_feedback(answer.id, "u", 5)  # ratings are +1 or -1
    assert await any_store.list_feedback() == []
    assert await any_store.feedback_counts() == {}


async def test_a_rating_press_reads_its_state_and_keeps_the_rating_in_one_go(
    any_store: Store,
) -> None:
    session = await current_session(any_store, "telegram", "c", "u", 1000.0, 60)
    answer = await add_message(any_store, session.id, "assistant", "a")
    await any_store.set_platform_ids(answer.id, ["m1", "m2"])
    await any_store.choose_language("telegram", "c", "ja", "u", now=900.0)
    question = _question(ref=str(answer.id))
    await any_store.set_awaiting(question)

    state = await any_store.rate_answer("telegram", "c", "u", answer.id, -1, 1050.0, pressed="m2")
    assert state.language.chosen == "ja" and state.awaiting == question
    assert state.feedback is not None
    assert (state.feedback.message_id, state.feedback.rating, state.feedback.comment) == (
        answer.id,
        -1,
        None,
    )
    assert await any_store.set_feedback_comment(answer.id, "u", "too vague")
    again = await any_store.rate_answer("telegram", "c", "u", answer.id, 1, 1200.0)
    assert again.awaiting is None  # expired by then
    assert again.feedback is not None and again.feedback.id == state.feedback.id
    assert (again.feedback.rating, again.feedback.comment) == (1, "too vague")

    # Refused, and nothing stored: another chat, another message, no answer, no normal answer.
    other = await current_session(any_store, "telegram", "d", "u", 1000.0, 60)
    question_row = await add_message(any_store, session.id, "user", "q")
    error = await add_message(any_store, session.id, "assistant", "oops", kind="error")
    for chat, answer_id, pressed in (
        ("d", answer.id, None),
        ("c", answer.id, "m3"),
        ("c", 10**9, None),
        ("c", question_row.id, None),
        ("c", error.id, None),
    ):
        refused = await any_store.rate_answer(
            "telegram", chat, "v", answer_id, 1, 1050.0, pressed=pressed
        )
        assert refused.feedback is None, (chat, answer_id, pressed)
    assert other.id != session.id
    assert [(f.user_id, f.rating) for f in await any_store.list_feedback()] == [("u", 1)]


async def test_feedback_lists_newest_first_in_pages_and_counts_by_rating(any_store: Store) -> None:
    a = await _answer(any_store, "a")
    b = await _answer(any_store, "b")
    await any_store.set_feedback(a, "u1", 1, now=100.0)
    await any_store.set_feedback(a, "u2", -1, now=300.0)
    await any_store.set_feedback(b, "u1", 1, now=200.0)
    await any_store.set_feedback(b, "u2", 1, now=200.0)  # same time: the later row first
    listed = await any_store.list_feedback()
    assert [(f.message_id, f.user_id) for f in listed] == [
        (a, "u2"),
        (b, "u2"),
        (b, "u1"),
        (a, "u1"),
    ]
    page = await any_store.list_feedback(limit=2, offset=1)
    assert [(f.message_id, f.user_id) for f in page] == [(b, "u2"), (b, "u1")]
    assert await any_store.list_feedback(limit=2, offset=10) == []
    assert await any_store.feedback_counts() == {1: 3, -1: 1}
    # A changed rating moves to the top and between the counts.
    await any_store.set_feedback(a, "u1", -1, now=400.0)
    (top, *_) = await any_store.list_feedback(limit=1)
    assert (top.message_id, top.user_id, top.rating) == (a, "u1", -1)
    assert await any_store.feedback_counts() == {1: 2, -1: 2}


# Deliveries


async def test_a_batch_keeps_its_first_retry_key_until_it_is_sent(any_store: Store) -> None:
    first = await any_store.delivery_batch("line", "m1", 0, "key-a", now=100.0)
    assert (first.channel, first.ref, first.batch, first.retry_key) == ("line", "m1", 0, "key-a")
    assert (first.sent_at, first.platform_ids, first.created_at) == (None, [], 100.0)
    again = await any_store.delivery_batch("line", "m1", 0, "key-b", now=200.0)
    assert again == first  # a retry reuses the stored key
    second = await any_store.delivery_batch("line", "m1", 1, "key-c", now=300.0)
    other = await any_store.delivery_batch("telegram", "m1", 0, "key-d", now=300.0)
    assert (second.retry_key, other.retry_key) == ("key-c", "key-d")

    await any_store.delivery_sent("line", "m1", 0, ["p2", "p1"], now=150.0)
    sent = await any_store.delivery_batch("line", "m1", 0, "key-e")
    assert (sent.retry_key, sent.sent_at, sent.platform_ids) == ("key-a", 150.0, ["p2", "p1"])
    unsent = await any_store.delivery_batch("line", "m1", 1, "key-f")
    assert (unsent.retry_key, unsent.sent_at) == ("key-c", None)
    (count,) = await rows(any_store, "select count(*) as n from deliveries")
    assert count["n"] == 3


async def test_a_batch_sent_without_a_record_is_recorded_with_its_answer(any_store: Store) -> None:
    """A reply-token batch of a fresh answer is recorded once sent, with the answer's ids."""
    turn = await open_turn(any_store, "line", "c", "u", "hi", inbox_id=None, **LIMITS)
    answer = await add_message(any_store, turn.session_id, "assistant", "hello")
    ref = f"answer:{answer.id}"
    await any_store.delivery_sent(
        "line", ref, 0, ["p1"], now=150.0, answer=answer.id, answer_ids=["p1"]
    )
    sent = await any_store.delivery_batch("line", ref, 0, "key-a")
    assert (sent.sent_at, sent.platform_ids) == (150.0, ["p1"])  # a retry sends nothing again
    await any_store.delivery_batch("line", ref, 1, "key-b")
    await any_store.delivery_sent("line", ref, 1, ["p2"], answer=answer.id, answer_ids=["p1", "p2"])
    stored = await any_store.get_message(answer.id)
    assert stored is not None and stored.platform_message_ids == ["p1", "p2"]
    later = await any_store.delivery_batch("line", ref, 1, "key-c")
    assert (later.retry_key, later.platform_ids) == ("key-b", ["p2"])  # its key stays


# Stats


async def test_proposals_are_counted_by_status(any_store: Store) -> None:
    assert await any_store.proposal_counts() == {}
    for status in ("pending", "pending", "applied", "rejected", "pending"):
        await execute(
            any_store,
            "insert into proposals (kind, name, description, content, content_hash,"
            " generated_at, status) values ('create', 'n', 'd', 'c', 'h', 1.0, ?)",
            status,
        )
    assert await any_store.proposal_counts() == {"pending": 3, "applied": 1, "rejected": 1}


# Registry


def _skill(slug: str, **changes: Any) -> SkillRecord:
    values: dict[str, Any] = {
        "slug": slug,
        "source": "bundled",
        "content_hash": "h1",
        "created_at": 100.0,
        "updated_at": 100.0,
    }
    return SkillRecord(**{**values, **changes})


async def test_skill_records_are_put_replaced_and_listed_by_slug(any_store: Store) -> None:
    assert await any_store.skill_records() == []
    slugs = ["b-x", "a_z", "B", "a-b", "ab", "a"]
    await any_store.put_skill_records([_skill(s) for s in slugs])
    assert [r.slug for r in await any_store.skill_records()] == sorted(slugs)  # byte order
    await any_store.put_skill_records([])

    changed = _skill(
        "a",
        source="custom",
        enabled=False,
        review_status="retired",
        content_hash="h2",
        created_at=150.0,
        updated_at=200.0,
    )
    await any_store.put_skill_records([changed, _skill("new", source="auto")])
    assert await any_store.get_skill_record("a") == changed  # every column replaced
    found = await any_store.get_skill_record("new")
    assert found is not None and found.source == "auto" and found.enabled
    assert await any_store.get_skill_record("missing") is None
    assert len(await any_store.skill_records()) == len(slugs) + 1
    # The same slug twice in one call: the later record wins.
    await any_store.put_skill_records([_skill("dup", content_hash="x"), _skill("dup")])
    dup = await any_store.get_skill_record("dup")
    assert dup is not None and dup.content_hash == "h1"


async def test_a_skill_is_measured_from_when_its_text_changed(any_store: Store) -> None:
    async def since(slug: str) -> float:
        (row,) = await rows(any_store, "select content_since from skills where slug = ?", slug)
        return float(row["content_since"])

    await any_store.put_skill_records([_skill("s", updated_at=100.0)])
    assert await since("s") == 100.0
    await any_store.put_skill_records([_skill("s", enabled=False, updated_at=200.0)])
    assert await since("s") == 100.0  # same text
    await any_store.put_skill_records([_skill("s", content_hash="h2", updated_at=300.0)])
    assert await since("s") == 300.0


async def test_a_bad_registry_row_leaves_the_others_unwritten(any_store: Store) -> None:
    with pytest.raises(StoreError):
        await any_store.put_skill_records([_skill("ok"), _skill("bad", source="elsewhere")])
    assert await any_store.skill_records() == []


async def test_meta_values_are_stored_and_replaced(any_store: Store) -> None:
    assert await any_store.get_meta("last_sync") is None
    await any_store.set_meta("last_sync", "1")
    await any_store.set_meta("other", "")
    await any_store.set_meta("last_sync", "2")
    assert await any_store.get_meta("last_sync") == "2"
    assert await any_store.get_meta("other") == ""


def _question(**changes: Any) -> Awaiting:
    values: dict[str, Any] = {
        "channel": "telegram",
        "chat_id": "c",
        "user_id": "u",
        "purpose": "feedback_comment",
        "ref": "7",
        "expires_at": 1100.0,
        "created_at": 1000.0,
    }
    return Awaiting(**{**values, **changes})


async def test_an_awaited_answer_is_taken_once_and_expires(any_store: Store) -> None:
    q = _question()
    await any_store.set_awaiting(q)
    assert await any_store.peek_awaiting("telegram", "c", "u", now=1050) == q
    assert await any_store.peek_awaiting("telegram", "c", "u", now=1100) == q  # until expiry
    assert await any_store.peek_awaiting("telegram", "c", "u", now=1100.5) is None
    assert await any_store.peek_awaiting("telegram", "c", "other", now=1050) is None
    assert await any_store.take_awaiting("telegram", "c", "u", now=1050) == q
    assert await any_store.take_awaiting("telegram", "c", "u", now=1050) is None
    await any_store.set_awaiting(q)
    assert await any_store.take_awaiting("telegram", "c", "u", now=1200) is None  # expired
    assert await any_store.peek_awaiting("telegram", "c", "u", now=1050) is None  # and gone


async def test_a_new_question_replaces_the_open_one_of_that_user(any_store: Store) -> None:
    await any_store.set_awaiting(_question())
    other_user = _question(user_id="v", ref="8")
    await any_store.set_awaiting(other_user)
    newer = _question(purpose="review_reason", ref="9", prompt_message_id="55", expires_at=2000.0)
    await any_store.set_awaiting(newer)
    assert await any_store.peek_awaiting("telegram", "c", "u", now=1500) == newer
    assert await any_store.take_awaiting("telegram", "c", "u", now=1500) == newer
    assert await any_store.take_awaiting("telegram", "c", "v", now=1050) == other_user


# Several writers at once (PostgreSQL serves them on several connections)


async def test_turns_arriving_together_share_one_new_session(any_store: Store) -> None:
    turns = await asyncio.gather(
        *(
            open_turn(any_store, "telegram", "c", "u", f"q{i}", inbox_id=None, **LIMITS)
            for i in range(8)
        )
    )
    assert len({t.session_id for t in turns}) == 1
    assert max(len(t.history) for t in turns) == 8
    (count,) = await rows(any_store, "select count(*) as n from sessions")
    assert count["n"] == 1


async def test_a_question_is_taken_by_one_caller_and_a_batch_keeps_one_key(
    any_store: Store,
) -> None:
    await any_store.set_awaiting(_question())
    taken = await asyncio.gather(
        *(any_store.take_awaiting("telegram", "c", "u", now=1050) for _ in range(6))
    )
    assert [t for t in taken if t is not None] == [_question()]
    batches = await asyncio.gather(
        *(any_store.delivery_batch("line", "m", 0, f"key-{i}") for i in range(6))
    )
    assert len({b.retry_key for b in batches}) == 1


async def test_an_unsent_message_and_its_answer_leave_history_and_evidence(
    any_store: Store,
) -> None:
    item = await any_store.inbox_add("line", "e1", "c", "{}")
    assert item is not None
    turn = await open_turn(
        any_store, "line", "c", "u", "secret", inbox_id=item.id, platform_message_id="m1", **LIMITS
    )
    await add_message(any_store, turn.session_id, "assistant", "a1", inbox_id=item.id, now=1001.0)
    # Another chat's message with the same platform id is not touched.
    await open_turn(
        any_store, "line", "other", "u", "keep", inbox_id=None, platform_message_id="m1", **LIMITS
    )
    assert not await any_store.unsend_message("line", "c", "m2")
    assert await any_store.unsend_message("line", "c", "m1", now=1005.0)
    later = await open_turn(
        any_store, "line", "c", "u", "q2", inbox_id=None, **{**LIMITS, "now": 1010.0}
    )
    assert [m.text for m in later.history] == ["q2"]
    [evidence] = await any_store.session_evidence([turn.session_id])
    assert [t.text for t in evidence.turns] == ["q2"]
    unsent = [
        r for r in await rows(any_store, "select text, unsent_at from messages") if r["unsent_at"]
    ]
    assert [(r["text"], r["unsent_at"]) for r in unsent] == [("", 1005.0), ("a1", 1005.0)]
