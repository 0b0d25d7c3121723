"""A proposal's trial in the store, on SQLite and PostgreSQL: its summary on the proposal's
row and its pairs written in one transaction with it, read back in order; the sessions a
trial may try; the pairs gone with a dropped proposal and with the user's /forget."""

from __future__ import annotations

import pytest

from gateway.review.trials import ArmCounts, SideCounts, TrialPair, TrialSummary
from gateway.store import Store
from tests.store.test_store_review_backends import candidate
from tests.synthesis_support import seed_session


def pair(message_id: int, arm: str = "with_it", outcome: str | None = "better") -> TrialPair:
    return TrialPair.model_validate(
        {
            "side": "fixes",
            "arm": arm,
            "message_id": message_id,
            "rating": -1,
            "comment": "too long",
            "question": "How do I word it?",
            "before": "A long answer.",
            "after": "would call web_fetch" if arm == "control" else "A short one.",
            "outcome": outcome,
            "why": "it is shorter",
        }
    )


SUMMARY = TrialSummary(
    verdict="measured_gain",
    fixes=SideCounts(tried=1, with_it=ArmCounts(better=1), control=ArmCounts(same=1)),
    calls=4,
    judge="judge-model",
)


async def test_a_trial_is_kept_with_its_proposal(any_store: Store) -> None:
    session = await seed_session(any_store, chat="u1")
    (answer,) = [
        t.message_id
        for e in await any_store.session_evidence([session])
        for t in e.turns
        if t.role == "assistant"
    ]
    pairs = [pair(answer), pair(answer, "control", None)]
    p = await any_store.add_proposal(candidate("tone", trial=SUMMARY), None, pairs)
    assert p.trial == SUMMARY
    assert (await any_store.get_proposal(p.id)) == p
    assert await any_store.trial_pairs(p.id) == pairs
    untried = await any_store.add_proposal(candidate("other"), None)
    assert untried.trial is None and await any_store.trial_pairs(untried.id) == []

    # Tried sessions: rated, newest first, none of those held out.
    other = await seed_session(any_store, rating=1)
    unrated = await seed_session(any_store, rating=None)
    assert await any_store.rated_sessions([], 10) == [other, session]
    assert await any_store.rated_sessions([other], 10) == [session]
    assert unrated not in await any_store.rated_sessions([], 10)

    # A proposal dropped before anyone saw it takes its pairs with it.
    dropped = await any_store.add_proposal(candidate("gone", trial=SUMMARY), None, pairs)
    await any_store.drop_proposal(dropped.id)
    assert await any_store.get_proposal(dropped.id) is None
    assert await any_store.trial_pairs(dropped.id) == []

    # The user forgets: the pairs made of their answers go; the counts (no text) stay.
    await any_store.forget_user("telegram", "u1", 10.0)
    assert await any_store.trial_pairs(p.id) == []
    kept = await any_store.get_proposal(p.id)
    assert kept is not None and kept.trial == SUMMARY


async def test_rated_sessions_are_read_newest_first_a_page_at_a_time(
    any_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gateway.store import synthesis

    monkeypatch.setattr(synthesis, "RATED_PAGE", 2)
    sessions = [await seed_session(any_store, rating=1 if n % 2 else -1) for n in range(5)]
    # A second user's rating of the oldest answer: the same session, once.
    (oldest,) = [
        t.message_id
        for e in await any_store.session_evidence([sessions[0]])
        for t in e.turns
        if t.role == "assistant"
    ]
    await any_store.set_feedback(oldest, "u2", 1)
    newest_first = sessions[::-1]
    assert await any_store.rated_sessions([], 10) == newest_first
    assert await any_store.rated_sessions([], 3) == newest_first[:3]
    assert await any_store.rated_sessions([sessions[3]], 10) == [
        s for s in newest_first if s != sessions[3]
    ]
    assert await any_store.rated_sessions(sessions, 10) == []
