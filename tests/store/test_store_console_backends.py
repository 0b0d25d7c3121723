"""What the admin console reads, on SQLite and on a real PostgreSQL server."""

from __future__ import annotations

from datetime import UTC, datetime

from gateway.core.models import MessageKind, Role
from gateway.core.records import MessageRecord, SkillRecord, Trace
from gateway.review.proposals import Candidate, Proposal
from gateway.store import Store
from gateway.synthesis.runs import RunDropped, RunRecord
from tests.store_support import (
    add_message,
    add_skill_version,
    count_proposals,
    current_session,
    open_turn,
)

IDLE = 10**9  # no session goes idle between the moments a test picks


def utc(text: str) -> float:
    """Epoch seconds of an ISO moment in UTC."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


async def open_session(
    store: Store, chat: str, at: float, *, channel: str = "telegram", user: str | None = "u1"
) -> int:
    return (await current_session(store, channel, chat, user, at, IDLE)).id


async def say(
    store: Store,
    session_id: int,
    text: str,
    at: float,
    *,
    answer: bool = False,
    kind: MessageKind = "normal",
    trace: Trace | None = None,
) -> MessageRecord:
    role: Role = "assistant" if answer else "user"
    if answer and trace is None:
        trace = Trace()
    return await add_message(store, session_id, role, text, kind=kind, trace=trace, now=at)


def candidate(name: str, *, target: str | None = None, at: float = 1000.0) -> Candidate:
    return Candidate(
        kind="update" if target else "create",
        target=target,
        name=name,
        description=f"The {name} skill.",
        content=f"# {name}\n\nBody of {name}.",
        content_hash=f"hash-{name}-{at}",
        based_on=[3, 1],
        rationale="Answers were rated down.",
        model="fake-model",
        generated_at=at,
    )


async def propose(
    store: Store, name: str, status: str = "pending", *, target: str | None = None
) -> Proposal:
    p = await store.add_proposal(candidate(name, target=target), None)
    if status != "pending":
        assert await store.transition(
            p.id, from_status="pending", to_status=status, by="web", at=2000.0
        )
    return p


async def test_sessions_most_recently_active_first_with_their_counts(any_store: Store) -> None:
    store = any_store
    rated = await open_session(store, "chat-a", 1000.0)
    await say(store, rated, "How do I reset my password?", 1000.0)
    first = await say(store, rated, "Open settings, then security.", 1001.0, answer=True)
    await store.set_feedback(first.id, "u1", 1, now=1002.0)
    await store.set_feedback(first.id, "u2", -1, now=1003.0)
    await say(store, rated, "And on the phone?", 1004.0)
    await say(store, rated, "(the model failed)", 1005.0, answer=True, kind="error")
    await store.finish_chat_session("telegram", "chat-a", "new", now=1006.0)
    line = await open_session(store, "chat-b", 2000.0, channel="line", user=None)
    await say(store, line, "Hello from LINE", 2000.0)
    older = await open_session(store, "chat-c", 3000.0)
    await say(store, older, "(nothing asked yet)", 3000.0, answer=True, kind="notice")
    newer = await open_session(store, "chat-d", 3000.0)  # same moment: the newer id first
    run = await store.start_run("schedule", "fake-model", 1500.0)
    await store.consume_sessions([rated], run, 1500.0)

    assert await store.count_sessions() == 4
    assert await store.count_sessions("telegram") == 3
    assert await store.count_sessions("line") == 1
    assert await store.count_sessions("slack") == 0
    assert await store.has_sessions("line") and not await store.has_sessions("slack")

    rows = await store.session_summaries()
    assert [r.id for r in rows] == [newer, older, line, rated]
    by_id = {r.id: r for r in rows}
    s = by_id[rated]
    assert (s.channel, s.chat_id, s.user_id) == ("telegram", "chat-a", "u1")
    assert (s.started_at, s.last_activity_at) == (1000.0, 1000.0)
    assert (s.finished_at, s.finish_reason) == (1006.0, "new")
    assert (s.messages, s.errors, s.ups, s.downs) == (4, 1, 1, 1)
    assert s.consumed_by == run
    assert s.opening == "How do I reset my password?"
    lone = by_id[line]
    assert (lone.channel, lone.user_id, lone.finished_at, lone.consumed_by) == (
        "line",
        None,
        None,
        None,
    )
    assert (lone.messages, lone.errors, lone.ups, lone.downs) == (1, 0, 0, 0)
    assert lone.opening == "Hello from LINE"
    assert by_id[older].opening is None and by_id[older].messages == 1
    assert by_id[newer].messages == 0 and by_id[newer].opening is None

    # Pages, and one channel at a time.
    assert [r.id for r in await store.session_summaries(limit=2)] == [newer, older]
    assert [r.id for r in await store.session_summaries(limit=2, offset=2)] == [line, rated]
    assert await store.session_summaries(limit=2, offset=4) == []
    telegram = await store.session_summaries(limit=2, offset=1, channel="telegram")
    assert [r.id for r in telegram] == [older, rated]
    assert [r.id for r in await store.session_summaries(channel="line")] == [line]
    assert await store.session_summaries(channel="slack") == []


async def test_a_later_turn_moves_a_session_to_the_top(any_store: Store) -> None:
    store = any_store
    a = await open_session(store, "chat-a", 100.0)
    b = await open_session(store, "chat-b", 200.0)
    assert [r.id for r in await store.session_summaries()] == [b, a]
    turn = await open_turn(
        store,
        "telegram",
        "chat-a",
        "u1",
        "Back again",
        inbox_id=None,
        now=300.0,
        idle_seconds=IDLE,
        history_limit=10,
    )
    assert turn.session_id == a
    rows = await store.session_summaries()
    assert [r.id for r in rows] == [a, b]
    assert (rows[0].last_activity_at, rows[0].opening, rows[0].messages) == (
        300.0,
        "Back again",
        1,
    )


async def test_sessions_by_id_leaves_unknown_ids_out(any_store: Store) -> None:
    store = any_store
    a = await open_session(store, "chat-a", 100.0)
    await say(store, a, "First", 100.0)
    answer = await say(store, a, "Answer", 101.0, answer=True)
    await store.set_feedback(answer.id, "u1", -1, now=102.0)
    b = await open_session(store, "chat-b", 200.0, channel="line")
    await open_session(store, "chat-c", 300.0)

    found = await store.sessions_by_id([b, a, a + b + 1000])
    assert sorted(found) == sorted([a, b])
    assert (found[a].messages, found[a].downs, found[a].opening) == (2, 1, "First")
    assert found[b].channel == "line"
    listed = {r.id: r for r in await store.session_summaries()}
    assert found[a] == listed[a] and found[b] == listed[b]
    assert await store.sessions_by_id([]) == {}
    assert await store.sessions_by_id([a + b + 1000]) == {}


async def test_a_transcript_has_every_message_with_its_trace_and_ratings(
    any_store: Store,
) -> None:
    store = any_store
    sid = await open_session(store, "chat-a", 100.0)
    other = await open_session(store, "chat-b", 100.0)
    question = await say(store, sid, "Summarise this thread", 100.0)
    trace = Trace(
        skills_offered=["writing", "brevity"],
        skills_loaded=["writing"],
        skills_withheld=["tone"],
        tools_used=["load_skill"],
        completed=True,
        latency_ms=850,
        prompt_tokens=120,
        completion_tokens=40,
        model="fake-model",
    )
    answer = await say(store, sid, "Here is the summary.", 101.0, answer=True, trace=trace)
    await store.set_platform_ids(answer.id, ["m-1", "m-2"])
    await say(store, sid, "Shorter please", 102.0)
    failed_trace = Trace(completed=False, error="ModelUnavailable: down", model="fake-model")
    failed = await say(store, sid, "(failed)", 103.0, answer=True, kind="error", trace=failed_trace)
    untraced = await add_message(store, sid, "assistant", "No trace here", now=104.0)
    await store.set_feedback(answer.id, "u2", 1, now=110.0)
    await store.set_feedback(answer.id, "u1", -1, now=111.0)
    assert await store.set_feedback_comment(answer.id, "u1", "too long", now=112.0)
    await store.set_feedback(failed.id, "u1", -1, now=113.0)
    other_answer = await say(store, other, "Elsewhere", 105.0, answer=True)
    await store.set_feedback(other_answer.id, "u1", 1, now=114.0)

    entries = await store.session_transcript(sid)
    assert [e.message.id for e in entries] == [
        question.id,
        answer.id,
        entries[2].message.id,
        failed.id,
        untraced.id,
    ]
    assert [e.message.text for e in entries] == [
        "Summarise this thread",
        "Here is the summary.",
        "Shorter please",
        "(failed)",
        "No trace here",
    ]
    roles = ["user", "assistant", "user", "assistant", "assistant"]
    assert [e.message.role for e in entries] == roles
    assert [e.message.kind for e in entries] == ["normal", "normal", "normal", "error", "normal"]
    assert entries[0].message == question
    assert entries[1].message.platform_message_ids == ["m-1", "m-2"]
    assert entries[1].message.created_at == 101.0

    assert entries[0].trace is None and entries[2].trace is None and entries[4].trace is None
    assert entries[1].trace == trace
    assert entries[3].trace == failed_trace
    assert entries[3].trace is not None and entries[3].trace.completed is False

    ratings = entries[1].feedback
    assert [(f.user_id, f.rating, f.comment) for f in ratings] == [
        ("u2", 1, None),
        ("u1", -1, "too long"),
    ]
    assert ratings[1].updated_at == 112.0 and ratings[1].created_at == 111.0
    assert (ratings[0].channel, ratings[0].chat_id) == ("telegram", "chat-a")
    assert [f.rating for f in entries[3].feedback] == [-1]
    assert entries[0].feedback == [] and entries[4].feedback == []

    assert [e.message.text for e in await store.session_transcript(other)] == ["Elsewhere"]
    assert await store.session_transcript(other + sid + 1000) == []


async def test_feedback_by_session_in_the_order_given(any_store: Store) -> None:
    store = any_store
    a = await open_session(store, "chat-a", 100.0)
    b = await open_session(store, "chat-b", 100.0, channel="line")
    quiet = await open_session(store, "chat-c", 100.0)
    a1 = await say(store, a, "One", 101.0, answer=True)
    b1 = await say(store, b, "Two", 102.0, answer=True)
    a2 = await say(store, a, "Three", 103.0, answer=True)
    await say(store, quiet, "Unrated", 104.0, answer=True)
    await store.set_feedback(a2.id, "u1", 1, now=110.0)
    await store.set_feedback(b1.id, "u1", -1, now=111.0)
    await store.set_feedback(a1.id, "u1", -1, now=112.0)
    await store.set_feedback(a2.id, "u1", -1, now=113.0)  # changes the rating, keeps its place

    found = await store.feedback_by_session([a, b, quiet, 10_000])
    assert sorted(found) == sorted([a, b])
    assert [(f.message_id, f.rating) for f in found[a]] == [(a2.id, -1), (a1.id, -1)]
    assert found[a][0].created_at == 110.0 and found[a][0].updated_at == 113.0
    assert [(f.message_id, f.rating, f.channel) for f in found[b]] == [(b1.id, -1, "line")]
    assert list(await store.feedback_by_session([b])) == [b]
    assert await store.feedback_by_session([]) == {}
    assert await store.feedback_by_session([quiet]) == {}


async def test_daily_ratings_are_counted_per_utc_day(any_store: Store) -> None:
    store = any_store
    assert await store.daily_ratings() == []
    sid = await open_session(store, "chat-a", utc("2024-03-08T00:00:00"))
    moments = [
        ("2024-03-08T09:30:00", 1),
        ("2024-03-09T23:59:59.500", 1),  # the last half second of the 9th, in UTC
        ("2024-03-09T00:00:00", -1),
        ("2024-03-10T00:00:00", -1),  # the first moment of the 10th
        ("2024-03-10T00:00:00.250", 1),
        ("2024-03-10T13:00:00", 1),
        ("2024-03-12T18:45:00", -1),
    ]
    answers = []
    for i, (moment, rating) in enumerate(moments):
        answer = await say(store, sid, f"Answer {i}", utc(moment), answer=True)
        await store.set_feedback(answer.id, "u1", rating, now=utc(moment))
        answers.append(answer)
    # A rating changed later still counts on the day it was first given, as what it is now.
    await store.set_feedback(answers[0].id, "u1", -1, now=utc("2024-03-12T10:00:00"))

    days = await store.daily_ratings()
    assert [(d.day, d.ups, d.downs) for d in days] == [
        ("2024-03-08", 0, 1),
        ("2024-03-09", 1, 1),
        ("2024-03-10", 2, 1),
        ("2024-03-12", 0, 1),
    ]
    assert all(type(d.ups) is int and type(d.downs) is int for d in days)
    assert (days[2].total, days[2].rate) == (3, 2 / 3)
    assert days[3].rate == 0.0

    since = await store.daily_ratings(utc("2024-03-10T00:00:00"))  # inclusive
    assert [(d.day, d.ups, d.downs) for d in since] == [
        ("2024-03-10", 2, 1),
        ("2024-03-12", 0, 1),
    ]
    midday = await store.daily_ratings(utc("2024-03-10T00:00:00.100"))
    assert [(d.day, d.ups, d.downs) for d in midday] == [("2024-03-10", 2, 0), ("2024-03-12", 0, 1)]
    assert await store.daily_ratings(utc("2024-03-13T00:00:00")) == []
    assert len(await store.daily_ratings(0)) == 4


async def test_latest_downvotes_newest_first_with_their_question(any_store: Store) -> None:
    store = any_store
    a = await open_session(store, "chat-a", 100.0)
    b = await open_session(store, "chat-b", 100.0, channel="line")
    await say(store, a, "What is the capital of France?", 100.0)
    paris = await say(store, a, "Berlin.", 101.0, answer=True)
    await say(store, a, "Are you sure?", 102.0)
    sure = await say(store, a, "Yes.", 103.0, answer=True)
    await say(store, a, "A question after them", 104.0)
    opening = await say(store, b, "Welcome!", 100.0, answer=True)  # nothing asked before it
    await say(store, b, "Thanks", 101.0)
    liked = await say(store, b, "You are welcome.", 102.0, answer=True)

    await store.set_feedback(paris.id, "u1", -1, now=200.0)
    await store.set_feedback(opening.id, "u1", -1, now=300.0)
    await store.set_feedback(liked.id, "u1", 1, now=400.0)  # a 👍 is never listed
    await store.set_feedback(sure.id, "u1", -1, now=300.0)  # same moment: the newer rating first
    await store.set_feedback(paris.id, "u2", -1, now=250.0)

    downs = await store.latest_downvotes()
    assert [(d.feedback.message_id, d.feedback.user_id) for d in downs] == [
        (sure.id, "u1"),
        (opening.id, "u1"),
        (paris.id, "u2"),
        (paris.id, "u1"),
    ]
    assert [d.question for d in downs] == [
        "Are you sure?",
        None,
        "What is the capital of France?",
        "What is the capital of France?",
    ]
    assert [d.answer for d in downs] == ["Yes.", "Welcome!", "Berlin.", "Berlin."]
    assert [d.session_id for d in downs] == [a, b, a, a]
    assert downs[1].feedback.channel == "line"
    assert all(d.feedback.rating == -1 for d in downs)

    # A comment is a change: it brings the rating back to the top.
    assert await store.set_feedback_comment(paris.id, "u1", "wrong city", now=500.0)
    top = await store.latest_downvotes(limit=2)
    assert [(d.feedback.message_id, d.feedback.user_id) for d in top] == [
        (paris.id, "u1"),
        (sure.id, "u1"),
    ]
    assert top[0].feedback.comment == "wrong city" and top[0].feedback.updated_at == 500.0
    # A 👎 turned into a 👍 drops out.
    await store.set_feedback(sure.id, "u1", 1, now=600.0)
    assert sure.id not in [d.feedback.message_id for d in await store.latest_downvotes()]
    assert len(await store.latest_downvotes(limit=0)) == 0


async def test_the_review_queue_puts_pending_first_then_the_rest_newest_first(
    any_store: Store,
) -> None:
    store = any_store
    assert await count_proposals(store) == 0
    assert await store.review_queue() == []
    p1 = await propose(store, "one")
    p2 = await propose(store, "two", "rejected")
    p3 = await propose(store, "three", target="writing")
    p4 = await propose(store, "four", "approved")
    p5 = await propose(store, "five", "stale")
    p6 = await propose(store, "six")

    assert await count_proposals(store) == 6
    queue = await store.review_queue()
    assert [p.id for p in queue] == [p1.id, p3.id, p6.id, p5.id, p4.id, p2.id]
    assert [p.status for p in queue] == [
        "pending",
        "pending",
        "pending",
        "stale",
        "approved",
        "rejected",
    ]
    assert queue[0] == p1
    assert queue[0].based_on == [3, 1] and queue[1].target == "writing"
    assert (queue[4].decided_by, queue[4].decided_at) == ("web", 2000.0)
    assert [p.id for p in await store.review_queue(limit=2)] == [p1.id, p3.id]
    assert [p.id for p in await store.review_queue(limit=2, offset=2)] == [p6.id, p5.id]
    assert [p.id for p in await store.review_queue(limit=10, offset=5)] == [p2.id]
    assert await store.review_queue(offset=6) == []

    # Once decided, a proposal leaves the head of the queue.
    assert await store.transition(
        p1.id, from_status="pending", to_status="rejected", by="web", at=3000.0
    )
    assert [p.id for p in await store.review_queue(limit=3)] == [p3.id, p6.id, p5.id]
    assert await count_proposals(store) == 6


async def test_a_skills_history_its_proposals_and_replaced_texts(any_store: Store) -> None:
    store = any_store
    created = await propose(store, "writing", "approved")
    await propose(store, "brevity")
    renamed = await propose(store, "writing-for-chat", "applied", target="writing")
    update = await propose(store, "writing", target="writing")
    await propose(store, "brevity", "rejected", target="brevity")
    await propose(store, "other", target="writing-for-chat")

    history = await store.skill_proposals("writing")
    assert [p.id for p in history] == [update.id, renamed.id, created.id]
    assert [p.kind for p in history] == ["update", "update", "create"]
    assert history[1].name == "writing-for-chat" and history[1].status == "applied"
    assert [p.name for p in await store.skill_proposals("writing-for-chat")] == ["other"]
    assert len(await store.skill_proposals("brevity")) == 2
    assert await store.skill_proposals("nothing") == []
    assert await store.skill_proposals("WRITING") == []

    assert await store.skill_versions("writing") == []
    await add_skill_version(store, "writing", "# Writing v1", "h1", created.id, 1000.0)
    await add_skill_version(store, "brevity", "# Brevity v1", "b1", created.id, 1500.0)
    await add_skill_version(store, "writing", "# Writing v2", "h2", renamed.id, 2000.0)
    versions = await store.skill_versions("writing")
    assert [(v.content, v.content_hash, v.replaced_at, v.proposal_id) for v in versions] == [
        ("# Writing v2", "h2", 2000.0, renamed.id),
        ("# Writing v1", "h1", 1000.0, created.id),
    ]
    assert versions[0].id > versions[1].id and versions[0].slug == "writing"
    assert [v.content for v in await store.skill_versions("brevity")] == ["# Brevity v1"]
    assert await store.skill_versions("nothing") == []


async def test_a_skill_switched_by_hand_keeps_who_why_and_when(any_store: Store) -> None:
    store = any_store
    record = SkillRecord(
        slug="notes", source="custom", content_hash="h", created_at=1.0, updated_at=1.0
    )
    await store.put_skill_records([record])
    assert await store.switch_skill("missing", False, "web:alice", None, 5.0) is None
    off = await store.switch_skill("notes", False, "web:alice", "wrong hours", 10.0)
    assert off is not None and (off.enabled, off.updated_at, off.source) == (False, 10.0, "custom")
    stored = await store.get_skill_record("notes")
    assert stored is not None and not stored.enabled and stored.content_hash == "h"
    await store.switch_skill("notes", True, "cli:bob", None, 20.0)
    switches = await store.skill_switches("notes")
    assert [(w.enabled, w.switched_by, w.reason, w.switched_at) for w in switches] == [
        (True, "cli:bob", None, 20.0),
        (False, "web:alice", "wrong hours", 10.0),
    ]
    latest = await store.last_switches()
    assert list(latest) == ["notes"] and latest["notes"].switched_by == "cli:bob"
    assert await store.skill_switches("other") == []


async def test_a_run_keeps_what_it_proposed_suppressed_and_refused(any_store: Store) -> None:
    store = any_store
    rid = await store.start_run("console", "fake-model", 100.0)
    made = await store.add_proposal(candidate("brevity"), rid)
    await store.add_proposal(candidate("other"), None)
    dropped = [
        RunDropped(kind="suppressed", name="brevity", reason="awaits review", matched=made.id),
        RunDropped(kind="refused", name="Bad Name", reason="invalid skill name"),
    ]
    run = RunRecord(id=rid, trigger="console", started_at=100.0, status="ok", proposed=1)
    await store.finish_run(run.model_copy(update={"finished_at": 130.0, "suppressed": 1}), dropped)
    found = await store.get_run(rid)
    assert found is not None and (found.status, found.finished_at, found.suppressed) == (
        "ok",
        130.0,
        1,
    )
    assert await store.run_dropped(rid) == dropped
    assert [p.id for p in await store.run_proposals(rid)] == [made.id]
    assert await store.get_run(rid + 100) is None and await store.run_dropped(rid + 100) == []


async def test_a_signed_out_session_is_remembered_until_it_would_expire(any_store: Store) -> None:
    assert not await any_store.signed_out("n1")
    await any_store.sign_out("n1", expires_at=200.0, now=100.0)
    await any_store.sign_out("n1", expires_at=200.0, now=100.0)  # twice is once
    assert await any_store.signed_out("n1") and not await any_store.signed_out("n2")
    await any_store.sign_out("n2", expires_at=400.0, now=300.0)  # n1's cookie has expired
    assert not await any_store.signed_out("n1") and await any_store.signed_out("n2")
