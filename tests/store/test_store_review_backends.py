"""Review state in the store, run on SQLite and on a real PostgreSQL server: proposals and
their decisions, synthesis runs and the run lock, skill effects and proposal cards."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from gateway.core.records import SkillRecord
from gateway.review.proposals import Candidate, Proposal, Rejection
from gateway.store import Store
from gateway.synthesis.calibration import Calibration
from gateway.synthesis.runs import Repeat, RunCheck, RunDropped, RunRecord
from tests.effect_support import seed_answer
from tests.store_support import add_skill_version, current_session, reviewer_names


def candidate(name: str = "tone", **fields: Any) -> Candidate:
    values: dict[str, Any] = {
        "kind": "create",
        "name": name,
        "description": f"About {name}.",
        "content": f"# {name}\n\nBody.",
        "content_hash": f"hash-{name}",
        "generated_at": 1.5,
    }
    values.update(fields)
    return Candidate(**values)


def tombstone(p: Proposal, reason: str | None = None, at: float = 3.0) -> Rejection:
    return Rejection(
        kind=p.kind,
        target=p.target,
        name=p.name,
        description=p.description,
        content_hash=p.content_hash,
        change_text=p.change_text,
        statement=p.statement,
        proposal_id=p.id,
        reason=reason,
        decided_by="web",
        rejected_at=at,
    )


def record(slug: str, digest: str, at: float) -> SkillRecord:
    return SkillRecord(slug=slug, source="auto", content_hash=digest, created_at=1.0, updated_at=at)


async def proposals(store: Store, *names: str, **fields: Any) -> list[Proposal]:
    return [await store.add_proposal(candidate(name, **fields), None) for name in names]


async def status_of(store: Store, proposal_id: int) -> str | None:
    p = await store.get_proposal(proposal_id)
    return None if p is None else p.status


# Proposals


async def test_a_proposal_is_stored_as_pending_and_read_back_whole(any_store: Store) -> None:
    run_id = await any_store.start_run("cli", "fake-model", 1.0)
    stored = await any_store.add_proposal(
        candidate(
            "tone",
            kind="update",
            target="writing",
            base_hash="old",
            based_on=[3, 1, 2],
            change_text="- a\n+ b",
            rationale="Users asked.",
            model="fake-model",
        ),
        run_id,
    )
    assert stored.status == "pending" and stored.run_id == run_id
    assert stored.based_on == [3, 1, 2] and stored.slug == "writing"
    assert (stored.decided_by, stored.decided_at, stored.promoted_at) == (None, None, None)
    assert await any_store.get_proposal(stored.id) == stored
    assert await any_store.get_proposal(stored.id + 100) is None


async def test_proposals_are_listed_newest_first_and_pending_ones_oldest_first(
    any_store: Store,
) -> None:
    a, b, c, d = await proposals(any_store, "a", "b", "c", "d")
    assert [p.id for p in await any_store.list_proposals()] == [d.id, c.id, b.id, a.id]
    assert [p.id for p in await any_store.list_proposals(limit=2, offset=1)] == [c.id, b.id]
    assert await any_store.list_proposals(limit=2, offset=10) == []
    assert await any_store.transition(
        c.id, from_status="pending", to_status="rejected", by="web", at=2.0
    )
    assert [p.id for p in await any_store.list_proposals("rejected")] == [c.id]
    assert [p.id for p in await any_store.list_proposals("pending")] == [d.id, b.id, a.id]
    assert await any_store.list_proposals("stale") == []
    assert [p.id for p in await any_store.pending_proposals()] == [a.id, b.id, d.id]


async def test_only_a_pending_proposal_can_be_dropped(any_store: Store) -> None:
    kept, dropped = await proposals(any_store, "kept", "dropped")
    await any_store.transition(kept.id, from_status="pending", to_status="stale", by=None, at=2.0)
    await any_store.drop_proposal(kept.id)
    await any_store.drop_proposal(dropped.id)
    await any_store.drop_proposal(dropped.id + 100)
    assert await any_store.get_proposal(dropped.id) is None
    assert await status_of(any_store, kept.id) == "stale"
    # Ids are never reused.
    (later,) = await proposals(any_store, "later")
    assert later.id > dropped.id


async def test_the_first_decision_wins_and_writes_its_tombstone(any_store: Store) -> None:
    (p,) = await proposals(any_store, "tone")
    assert await any_store.transition(
        p.id,
        from_status="pending",
        to_status="rejected",
        by="telegram:1",
        at=5.0,
        reason="Repeats another skill.",
        tombstone=tombstone(p, "Repeats another skill.", at=5.0),
    )
    # A late decision from the status it saw changes nothing and writes nothing.
    assert not await any_store.transition(
        p.id,
        from_status="pending",
        to_status="approved",
        by="telegram:2",
        at=6.0,
        reason="Fine.",
        tombstone=tombstone(p, "late"),
        record=record("tone", "hash-tone", 6.0),
    )
    decided = await any_store.get_proposal(p.id)
    assert decided is not None
    assert (decided.status, decided.decided_by, decided.decided_at, decided.reason) == (
        "rejected",
        "telegram:1",
        5.0,
        "Repeats another skill.",
    )
    (grave,) = await any_store.rejections()
    assert (grave.proposal_id, grave.name, grave.reason, grave.rejected_at) == (
        p.id,
        "tone",
        "Repeats another skill.",
        5.0,
    )
    assert grave.id is not None
    assert "tone" not in await any_store.skill_tallies()  # the loser's registry row is not written
    # A decision without a reason keeps the one given before.
    assert await any_store.transition(
        p.id, from_status="rejected", to_status="rolled_back", by="web", at=7.0
    )
    after = await any_store.get_proposal(p.id)
    assert after is not None and after.reason == "Repeats another skill."
    assert (after.status, after.decided_by, after.decided_at) == ("rolled_back", "web", 7.0)
    assert not await any_store.transition(
        p.id + 100, from_status="pending", to_status="approved", by="web", at=8.0
    )


async def test_a_claim_s_statement_is_kept_with_its_proposal_and_rejection(
    any_store: Store,
) -> None:
    stated, plain, withdrawn = [
        await any_store.add_proposal(c, None)
        for c in (
            candidate("tone", statement="Keep every chat answer under 60 words."),
            candidate("imported"),  # no statement written: the description states it
            candidate("gone", statement="Greet users by name."),
        )
    ]
    assert stated.statement == "Keep every chat answer under 60 words."
    assert (plain.statement, plain.said) == (None, "About imported.")
    for p in (stated, plain):
        assert await any_store.transition(
            p.id,
            from_status="pending",
            to_status="rejected",
            by="web",
            at=5.0,
            reason="no",
            tombstone=tombstone(p, "no", at=5.0),
        )
    kept = {r.name: r.statement for r in await any_store.rejections()}
    assert kept == {"tone": "Keep every chat answer under 60 words.", "imported": None}
    # A proposal's words withdrawn with its evidence take its statement with them.
    assert await any_store.transition(
        withdrawn.id,
        from_status="pending",
        to_status="stale",
        by="forget",
        at=6.0,
        reason="withdrawn",
        redacted="(withdrawn)",
    )
    after = await any_store.get_proposal(withdrawn.id)
    assert after is not None and after.statement is None


async def test_a_judge_s_calibration_keeps_whether_it_was_the_onboard_model(
    any_store: Store,
) -> None:
    result = Calibration(
        model="smollm2",
        kind="same-claim",
        total=16,
        correct=8,
        yes=16,
        unanswered=0,
        pairs_hash="h",
        at=1.0,
        onboard=True,
    )
    await any_store.record_calibration(result)
    assert await any_store.calibration("smollm2", "same-claim") == result
    # Served as any other model later: judged on its answers alone.
    await any_store.record_calibration(result.model_copy(update={"onboard": False, "at": 2.0}))
    found = await any_store.calibration("smollm2", "same-claim")
    assert found is not None and not found.onboard and found.at == 2.0


async def test_concurrent_decisions_on_one_proposal_have_exactly_one_winner(
    any_store: Store,
) -> None:
    for n in range(5):
        (p,) = await proposals(any_store, f"race-{n}")
        approving, rejecting = await asyncio.gather(
            any_store.transition(
                p.id,
                from_status="pending",
                to_status="approved",
                by="telegram:1",
                at=5.0,
                record=record(p.name, p.content_hash, 5.0),
            ),
            any_store.transition(
                p.id,
                from_status="pending",
                to_status="rejected",
                by="telegram:2",
                at=5.0,
                tombstone=tombstone(p, "no"),
            ),
        )
        approved, rejected = approving is not None, rejecting is not None
        assert approved != rejected
        winner = approving or rejecting
        assert winner is not None and winner.status == ("approved" if approved else "rejected")
        assert await status_of(any_store, p.id) == ("approved" if approved else "rejected")
        graves = [r for r in await any_store.rejections() if r.proposal_id == p.id]
        assert len(graves) == (0 if approved else 1)
        assert (p.name in await any_store.skill_tallies()) == approved


async def test_a_reason_given_later_reaches_the_proposal_and_its_tombstone(
    any_store: Store,
) -> None:
    rejected, pending = await proposals(any_store, "rejected", "pending")
    await any_store.transition(
        rejected.id,
        from_status="pending",
        to_status="rejected",
        by="web",
        at=2.0,
        tombstone=tombstone(rejected),
    )
    assert await any_store.set_rejection_reason(rejected.id, "Too long.")
    assert not await any_store.set_rejection_reason(pending.id, "Too long.")
    assert not await any_store.set_rejection_reason(pending.id + 100, "Too long.")
    got = await any_store.get_proposal(rejected.id)
    assert got is not None and got.reason == "Too long."
    assert [r.reason for r in await any_store.rejections()] == ["Too long."]
    other = await any_store.get_proposal(pending.id)
    assert other is not None and other.reason is None
    assert await any_store.set_rejection_reason(rejected.id, None)
    assert [r.reason for r in await any_store.rejections()] == [None]


async def test_tombstones_are_kept_newest_first(any_store: Store) -> None:
    ps = await proposals(any_store, "a", "b", "c")
    for n, p in enumerate(ps):
        await any_store.transition(
            p.id,
            from_status="pending",
            to_status="rejected",
            by="web",
            at=float(n),
            tombstone=tombstone(p, f"reason {p.name}", at=float(n)),
        )
    assert [r.name for r in await any_store.rejections()] == ["c", "b", "a"]
    assert [r.name for r in await any_store.rejections(limit=2)] == ["c", "b"]
    assert [r.reason for r in await any_store.rejections(1)] == ["reason c"]
    assert await any_store.rejections(limit=0) == []


async def test_an_approval_is_finished_once_it_is_marked_promoted(any_store: Store) -> None:
    first, second, third = await proposals(any_store, "first", "second", "third")
    for p, status in ((first, "approved"), (second, "applied"), (third, "rejected")):
        await any_store.transition(p.id, from_status="pending", to_status=status, by="web", at=2)
    assert [p.id for p in await any_store.unfinished_promotions()] == [first.id, second.id]

    await any_store.mark_promoted(first.id, 9.0, record("first", "hash-first", 9.0))
    assert [p.id for p in await any_store.unfinished_promotions()] == [second.id]
    promoted = await any_store.get_proposal(first.id)
    assert promoted is not None and promoted.promoted_at == 9.0
    # The registry row came with it: the skill is measured from when its text took effect.
    tallies = await any_store.skill_tallies()
    assert (tallies["first"].content_hash, tallies["first"].since) == ("hash-first", 9.0)
    # Marking again with a new text (a later approval) replaces the row and its start.
    await any_store.mark_promoted(first.id, 10.0, record("first", "hash-2", 10.0))
    tallies = await any_store.skill_tallies()
    assert (tallies["first"].content_hash, tallies["first"].since) == ("hash-2", 10.0)


async def test_the_last_promotion_of_each_skill_is_its_latest_approval(
    any_store: Store,
) -> None:
    created, updated, other, refused = [
        *await proposals(any_store, "tone"),
        *await proposals(any_store, "tone-v2", kind="update", target="tone"),
        *await proposals(any_store, "bikes"),
        *await proposals(any_store, "tone-v3", kind="update", target="tone"),
    ]
    assert await any_store.last_promotions() == {}
    for p, status in (
        (created, "applied"),
        (updated, "approved"),
        (other, "approved"),
        (refused, "rejected"),
    ):
        await any_store.transition(p.id, from_status="pending", to_status=status, by="web", at=2)
    last = await any_store.last_promotions()
    assert sorted(last) == ["bikes", "tone"]
    assert (last["tone"].id, last["bikes"].id) == (updated.id, other.id)


async def test_the_text_an_approval_replaced_is_kept_for_rollback(any_store: Store) -> None:
    p, other = await proposals(any_store, "tone", "other")
    assert await any_store.replaced_version(p.id) is None
    await add_skill_version(any_store, "tone", "# old text", "h-old", p.id, 4.0)
    await add_skill_version(any_store, "tone", "# newer text", "h-new", p.id, 5.0)
    version = await any_store.replaced_version(p.id)
    assert version is not None
    assert (version.slug, version.content, version.content_hash, version.replaced_at) == (
        "tone",
        "# old text",
        "h-old",
        4.0,
    )
    assert version.proposal_id == p.id
    assert await any_store.replaced_version(other.id) is None


# Synthesis: evidence, consumed sessions, runs, the lock


async def test_finished_sessions_are_read_once_with_their_turns_and_ratings(
    any_store: Store,
) -> None:
    first, first_reply = await seed_answer(any_store, loaded=["tone"], ratings=(1, -1))
    second, _ = await seed_answer(any_store, ratings=())
    third, _ = await seed_answer(any_store, ratings=(-1,))
    # An open session is not evidence yet.
    await current_session(any_store, "telegram", "still-talking", "u9", 1.0, 60)
    await any_store.set_feedback_comment(first_reply, "u1", "Too long.")

    assert await any_store.unconsumed_sessions(after_id=0, limit=10) == [first, second, third]
    assert await any_store.unconsumed_sessions(after_id=first, limit=1) == [second]

    assert await any_store.session_evidence([]) == []
    evidence = await any_store.session_evidence([third, first, third + 100])
    assert [e.session_id for e in evidence] == [third, first]
    assert all(e.channel == "telegram" for e in evidence)
    question, answer = evidence[1].turns
    assert (question.role, question.text, question.skills_loaded) == ("user", "a question", [])
    assert question.completed and question.ratings == []
    assert (answer.message_id, answer.role, answer.kind) == (first_reply, "assistant", "normal")
    assert answer.skills_loaded == ["tone"] and answer.tools_used == ["load_skill"]
    assert answer.completed and answer.error is None
    assert [(r.rating, r.comment) for r in answer.ratings] == [(1, None), (-1, "Too long.")]
    assert [r.rating for r in evidence[0].turns[1].ratings] == [-1]

    run_id = await any_store.start_run("cli", None, 2.0)
    await any_store.consume_sessions([first, third], run_id, 3.0)
    await any_store.consume_sessions([first], run_id, 4.0)  # read again: nothing changes
    await any_store.consume_sessions([], run_id, 4.0)
    assert await any_store.unconsumed_sessions(after_id=0, limit=10) == [second]


async def test_a_session_shown_without_result_is_fresh_again_only_once_rated_since(
    any_store: Store,
) -> None:
    first, _ = await seed_answer(any_store, ratings=(-1,))
    second, _ = await seed_answer(any_store, ratings=(-1,))
    third, _ = await seed_answer(any_store, ratings=(-1,))
    later = time.time() + 100
    await any_store.note_showings([first, second], later)
    await any_store.note_showings([third], 0.0)  # shown before its rating was given
    assert await any_store.unconsumed_sessions(after_id=0, limit=10, fresh=True) == [third]
    assert await any_store.unconsumed_sessions(after_id=0, limit=10) == [first, second, third]
    assert await any_store.shown_sessions(since=None, below=3, limit=10) == [second, first]
    await any_store.note_showings([first, first + 1000], later)  # a deleted session is skipped
    await any_store.note_showings([first], later)
    assert await any_store.shown_sessions(since=None, below=3, limit=10) == [second]
    assert await any_store.shown_sessions(since=later, below=3, limit=10) == []


async def test_runs_are_opened_finished_and_listed_newest_first(any_store: Store) -> None:
    first = await any_store.start_run("schedule", "fake-model", 10.0)
    second = await any_store.start_run("cli", None, 20.0)
    assert second > first
    await any_store.finish_run(
        RunRecord(
            id=first,
            trigger="ignored",
            started_at=0.0,
            status="ok",
            finished_at=12.5,
            sessions=4,
            skipped=1,
            batches=2,
            proposed=3,
            suppressed=1,
            refused=1,
            model="other-model",
            prompt_tokens=100,
            completion_tokens=50,
        )
    )
    runs = await any_store.list_runs()
    assert [r.id for r in runs] == [second, first]
    assert runs[0] == RunRecord(id=second, trigger="cli", started_at=20.0)
    done = runs[1]
    assert (done.trigger, done.started_at, done.status, done.finished_at) == (
        "schedule",
        10.0,
        "ok",
        12.5,
    )
    assert (done.sessions, done.skipped, done.batches, done.proposed) == (4, 1, 2, 3)
    assert (done.suppressed, done.refused, done.model, done.error) == (1, 1, "other-model", None)
    assert (done.prompt_tokens, done.completion_tokens) == (100, 50)
    await any_store.finish_run(
        RunRecord(id=second, trigger="cli", started_at=20.0, status="failed", error="boom")
    )
    (latest,) = await any_store.list_runs(limit=1)
    assert (latest.id, latest.status, latest.error) == (second, "failed", "boom")


async def test_a_runs_stop_is_kept_and_learning_tokens_are_summed_since_a_time(
    any_store: Store,
) -> None:
    old = await any_store.start_run("schedule", "m", 5.0)
    today = await any_store.start_run("schedule", "m", 100.0)
    stopped = await any_store.start_run("schedule", "m", 200.0)
    for rid, at, tokens in ((old, 5.0, 1000), (today, 100.0, 30)):
        await any_store.finish_run(
            RunRecord(
                id=rid,
                trigger="x",
                started_at=at,
                status="ok",
                prompt_tokens=tokens,
                completion_tokens=7,
            )
        )
    why = "learning budget reached: 37 of 10 tokens spent today"
    await any_store.finish_run(
        RunRecord(id=stopped, trigger="x", started_at=200.0, status="ok", stopped=why)
    )
    assert await any_store.learning_tokens(50.0) == 37
    assert await any_store.learning_tokens(0.0) == 1044
    assert await any_store.learning_tokens(500.0) == 0
    got = await any_store.get_run(stopped)
    assert got is not None and (got.status, got.stopped, got.error) == ("ok", why, None)
    assert (await any_store.get_run(today)).stopped is None  # type: ignore[union-attr]


async def test_a_runs_same_claim_checks_are_kept_in_order_with_what_was_compared(
    any_store: Store,
) -> None:
    run = await any_store.start_run("api", "m", 10.0)
    other = await any_store.start_run("api", "m", 11.0)
    checks = [
        RunCheck(
            name="kajougaki-list",
            decision="same",
            compared=["rejected #4 bullet-lists", "live writing-for-chat"],
            reason="the model judged it the same claim: 箇条書き is a bulleted list",
            matched=4,
        ),
        RunCheck(name="iso-dates", decision="held", compared=["live x"], reason="model down"),
        RunCheck(
            name="copy", decision="same", compared=["live x"], reason="same", matched_skill="x"
        ),
    ]
    repeat = RunDropped(
        kind="suppressed", name="kajougaki-list", reason="matches #4", matched=4, detail="same"
    )
    await any_store.finish_run(RunRecord(id=run, trigger="api", started_at=10.0), [repeat], checks)
    assert await any_store.run_checks(run) == checks
    assert await any_store.run_checks(other) == []
    assert await any_store.repeats_of(4) == [
        Repeat(run_id=run, name="kajougaki-list", detail="same", at=10.0)
    ]
    assert await any_store.repeats_of(5) == []


async def test_a_lease_is_held_renewed_and_taken_over_once_it_expires(any_store: Store) -> None:
    assert await any_store.lock_holder("synthesis", 100.0) is None
    assert await any_store.acquire_lock("synthesis", "a", 100.0, 10.0)
    assert await any_store.lock_holder("synthesis", 100.0) == "a"
    assert not await any_store.acquire_lock("synthesis", "b", 105.0, 10.0)
    assert await any_store.acquire_lock("other", "b", 105.0, 10.0)  # names are separate
    # The holder renews its lease: now until 118.
    assert await any_store.acquire_lock("synthesis", "a", 108.0, 10.0)
    assert not await any_store.acquire_lock("synthesis", "b", 112.0, 10.0)
    assert await any_store.lock_holder("synthesis", 118.0) == "a"
    assert await any_store.lock_holder("synthesis", 118.5) is None
    assert await any_store.acquire_lock("synthesis", "b", 118.5, 10.0)
    assert await any_store.lock_holder("synthesis", 119.0) == "b"
    # Only the holder can give it back.
    await any_store.release_lock("synthesis", "a")
    assert await any_store.lock_holder("synthesis", 119.0) == "b"
    await any_store.release_lock("synthesis", "b")
    assert await any_store.lock_holder("synthesis", 119.0) is None
    assert await any_store.acquire_lock("synthesis", "a", 119.0, 10.0)


async def test_concurrent_takers_of_a_lock_have_exactly_one_winner(any_store: Store) -> None:
    holders = [f"replica-{n}" for n in range(6)]
    won = await asyncio.gather(*(any_store.acquire_lock("fresh", h, 100.0, 30.0) for h in holders))
    assert sum(won) == 1
    assert await any_store.lock_holder("fresh", 100.0) == holders[won.index(True)]
    # The same once the lease has run out.
    won = await asyncio.gather(
        *(any_store.acquire_lock("fresh", h, 200.0, 30.0) for h in reversed(holders))
    )
    assert sum(won) == 1
    assert await any_store.lock_holder("fresh", 200.0) == holders[::-1][won.index(True)]


# Skill effects


async def test_a_promoted_skill_counts_the_rated_answers_since_its_registry_row(
    any_store: Store,
) -> None:
    (p,) = await proposals(any_store, "soup")
    await any_store.transition(p.id, from_status="pending", to_status="approved", by="web", at=1)
    await any_store.mark_promoted(p.id, 1.0, record("soup", "h1", 1.0))
    old, _ = await seed_answer(any_store, loaded=["soup"], ratings=(-1,))
    await seed_answer(any_store, loaded=["soup"], ratings=())
    await seed_answer(any_store, offered=["soup"], ratings=(1,))
    await seed_answer(any_store, withheld=["soup"], ratings=(-1, -1, 1))
    new, _ = await seed_answer(any_store, loaded=["soup"], ratings=(1, 1))
    soup = (await any_store.skill_tallies())["soup"]
    assert (soup.name, soup.content_hash, soup.since) == ("soup", "h1", 1.0)
    assert (soup.loaded.answers, soup.loaded.up, soup.loaded.down) == (3, 1, 1)
    assert (soup.offered.answers, soup.offered.up, soup.offered.down) == (1, 1, 0)
    assert (soup.withheld.answers, soup.withheld.up, soup.withheld.down) == (1, 0, 1)
    assert await any_store.exposure_sessions("soup") == [new, old]
    assert await any_store.exposure_sessions("soup", limit=1) == [new]
    assert await any_store.exposure_sessions("bikes") == []


# Proposal cards and reviewers' names


async def test_a_card_is_claimed_once_and_retaken_only_when_never_delivered(
    any_store: Store,
) -> None:
    (p,) = await proposals(any_store, "tone")
    assert await any_store.claim_card(p.id, "telegram", "1", retake_before=0.0, now=100.0)
    # Another sender (or a restart) leaves a fresh claim alone...
    assert not await any_store.claim_card(p.id, "telegram", "1", retake_before=50.0, now=110.0)
    # ...but takes over one older than its limit, once.
    assert await any_store.claim_card(p.id, "telegram", "1", retake_before=105.0, now=120.0)
    assert not await any_store.claim_card(p.id, "telegram", "1", retake_before=115.0, now=121.0)
    assert await any_store.claim_card(p.id, "line", "1", retake_before=0.0, now=121.0)
    assert await any_store.card_copies(p.id) == []  # claimed, not delivered
    await any_store.card_delivered(
        p.id, "telegram", "1", "m-1", status="pending", reason=None, now=122.0
    )
    assert not await any_store.claim_card(p.id, "telegram", "1", retake_before=1e12, now=130.0)
    (copy,) = await any_store.card_copies(p.id)
    assert (copy.channel, copy.chat_id, copy.platform_message_id) == ("telegram", "1", "m-1")
    assert (copy.claimed_at, copy.delivered_at, copy.shown_status) == (120.0, 122.0, "pending")


async def test_concurrent_claims_of_one_card_have_exactly_one_winner(any_store: Store) -> None:
    (p,) = await proposals(any_store, "tone")
    won = await asyncio.gather(
        *(
            any_store.claim_card(p.id, "telegram", "7", retake_before=50.0, now=100.0)
            for _ in range(5)
        )
    )
    assert sum(won) == 1


async def test_delivered_copies_show_their_proposal_until_it_changes(any_store: Store) -> None:
    p, q = await proposals(any_store, "tone", "other")
    # A copy delivered without a claim (a replacement sent) is recorded all the same.
    await any_store.card_delivered(p.id, "telegram", "2", "m-2", status="pending", reason=None)
    await any_store.claim_card(p.id, "telegram", "1", retake_before=0.0)
    await any_store.card_delivered(p.id, "telegram", "1", "m-1", status="pending", reason=None)
    await any_store.card_delivered(q.id, "line", "9", None, status="pending", reason=None)
    copies = await any_store.card_copies(p.id)
    assert [(c.chat_id, c.platform_message_id) for c in copies] == [("2", "m-2"), ("1", "m-1")]
    assert all(c.proposal_id == p.id and c.delivered_at for c in copies)
    assert copies[0].claimed_at == copies[0].delivered_at
    (line_copy,) = await any_store.card_copies(q.id)
    assert line_copy.platform_message_id is None
    assert await any_store.outdated_card_copies() == []  # a missing reason shows as none

    await any_store.transition(
        p.id, from_status="pending", to_status="rejected", by="web", at=2.0, reason="No."
    )
    outdated = await any_store.outdated_card_copies()
    assert [(c.proposal_id, c.chat_id, c.shown_status) for c in outdated] == [
        (p.id, "2", "pending"),
        (p.id, "1", "pending"),
    ]
    await any_store.cards_shown(p.id, [("telegram", "2")], "rejected", "No.")
    assert [c.chat_id for c in await any_store.outdated_card_copies()] == ["1"]
    # A replacement copy without a new message id keeps the old one.
    await any_store.card_delivered(p.id, "telegram", "1", None, status="rejected", reason="No.")
    assert await any_store.outdated_card_copies() == []
    copies = await any_store.card_copies(p.id)
    assert [(c.platform_message_id, c.shown_status, c.shown_reason) for c in copies] == [
        ("m-2", "rejected", "No."),
        ("m-1", "rejected", "No."),
    ]
    # A reason given later makes every copy outdated again.
    await any_store.set_rejection_reason(p.id, "Not needed.")
    assert len(await any_store.outdated_card_copies()) == 2


async def test_copies_come_with_their_admins_languages_and_are_marked_shown_together(
    any_store: Store,
) -> None:
    (p,) = await proposals(any_store, "tone")
    for channel, chat in (("telegram", "1"), ("telegram", "2"), ("line", "U9")):
        await any_store.card_delivered(p.id, channel, chat, None, status="pending", reason=None)
    await any_store.choose_language("telegram", "1", "ja", "1", now=5.0)
    await any_store.user_language_seen("telegram", "2", "th", ok=True, now=6.0)
    await any_store.user_language_seen("line", "U9", None, ok=False, now=7.0)
    await any_store.user_language_seen("line", "1", "de", ok=True, now=8.0)  # another channel's
    found = await any_store.card_copies_and_languages(p.id)
    assert [(c.channel, c.chat_id) for c, _ in found] == [
        ("telegram", "1"),
        ("telegram", "2"),
        ("line", "U9"),
    ]
    assert [(s.chosen, s.tag, s.ok, s.checked_at) for _, s in found] == [
        ("ja", None, False, None),
        (None, "th", True, 6.0),
        (None, None, False, 7.0),
    ]
    assert [c for c, _ in found] == await any_store.card_copies(p.id)
    await any_store.cards_shown(p.id, [("telegram", "2"), ("line", "U9")], "approved", None)
    await any_store.cards_shown(p.id, [], "rejected", "nothing changes")
    copies = await any_store.card_copies(p.id)
    assert [c.shown_status for c in copies] == ["pending", "approved", "approved"]


async def test_reviewers_are_shown_by_their_remembered_names(any_store: Store) -> None:
    assert await any_store.reviewer_name("telegram:1") is None
    await any_store.set_reviewer_name("telegram:1", "Alice", now=1.0)
    await any_store.set_reviewer_name("line:U2", "Bob")
    await any_store.set_reviewer_name("telegram:1", "Alice (@alice)", now=2.0)
    assert await any_store.reviewer_name("telegram:1") == "Alice (@alice)"
    assert await reviewer_names(any_store, []) == {}
    assert await reviewer_names(any_store, ["telegram:1", "line:U2", "web", "telegram:1"]) == {
        "telegram:1": "Alice (@alice)",
        "line:U2": "Bob",
    }


async def test_replicas_sharing_one_database_agree_on_every_decision_and_lease(
    postgres_url: str,
) -> None:
    """Several processes on one PostgreSQL server: each race has exactly one winner."""
    from gateway.store.postgres import PostgresStore

    replicas = [await PostgresStore(postgres_url).open() for _ in range(4)]
    try:
        first = replicas[0]
        for n in range(20):
            (p,) = await proposals(first, f"race-{n}")
            moved = await asyncio.gather(
                *(
                    r.transition(
                        p.id,
                        from_status="pending",
                        to_status="rejected" if i % 2 else "approved",
                        by=f"replica-{i}",
                        at=5.0,
                        tombstone=tombstone(p) if i % 2 else None,
                    )
                    for i, r in enumerate(replicas)
                )
            )
            won = [m is not None for m in moved]
            assert sum(won) == 1
            winner = won.index(True)
            decided = await first.get_proposal(p.id)
            assert decided is not None and decided.decided_by == f"replica-{winner}"
            assert moved[winner] == decided  # the winner is told the proposal as it left it
            graves = [r for r in await first.rejections() if r.proposal_id == p.id]
            assert len(graves) == winner % 2

            taken = await asyncio.gather(
                *(
                    r.acquire_lock("synthesis", f"replica-{i}", 100.0 * n, 50.0)
                    for i, r in enumerate(replicas)
                )
            )
            assert sum(taken) == 1
            assert await first.lock_holder("synthesis", 100.0 * n) == f"replica-{taken.index(True)}"

            claimed = await asyncio.gather(
                *(r.claim_card(p.id, "telegram", "1", retake_before=0.0) for r in replicas)
            )
            assert sum(claimed) == 1
    finally:
        for store in replicas:
            await store.close()
