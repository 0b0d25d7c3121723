"""Repeat notices in the store, on SQLite and on a real PostgreSQL server: written with the run
that found the repeats, counted since the rejection, each admin's copy claimed once."""

from __future__ import annotations

from gateway.review.repeats import RejectedRepeat
from gateway.store import Store
from gateway.synthesis.runs import RunRecord
from tests.store.test_store_review_backends import proposals, tombstone


def repeat(proposal_id: int, name: str) -> RejectedRepeat:
    return RejectedRepeat(
        proposal_id=proposal_id, name=name, description=f"Said as {name}.", content=f"# {name}"
    )


async def finished_run(store: Store, at: float, *repeats: RejectedRepeat) -> int:
    run_id = await store.start_run("manual", "m", at)
    done = RunRecord(id=run_id, trigger="manual", started_at=at, status="ok", finished_at=at + 1)
    await store.finish_run(done, repeats=repeats)
    return run_id


async def test_a_pass_notice_counts_each_rejection_and_is_sent_to_each_chat_once(
    any_store: Store,
) -> None:
    brevity, tone = await proposals(any_store, "brevity", "tone")
    for p in (brevity, tone):
        rejected = {"from_status": "pending", "to_status": "rejected", "by": "web", "at": 3.0}
        assert await any_store.transition(p.id, **rejected, tombstone=tombstone(p))
    assert await finished_run(any_store, 10.0) > 0
    assert await any_store.unsent_repeat_notices(0.0) == []  # nothing repeated: no notice

    seen = [repeat(brevity.id, "short"), repeat(tone.id, "warm"), repeat(brevity.id, "terse")]
    first = await finished_run(any_store, 20.0, *seen)
    (notice,) = await any_store.unsent_repeat_notices(0.0)
    assert notice.run_id == first
    assert [(i.proposal_id, i.slug, i.repeats, i.total, i.name) for i in notice.items] == [
        (brevity.id, "brevity", 2, 2, "terse"),  # the latest wording of the two
        (tone.id, "tone", 1, 1, "warm"),
    ]
    assert await any_store.unsent_repeat_notices(25.0) == []  # older than asked for

    assert await any_store.claim_notice(notice.id, "telegram", "1", retake_before=0.0, now=30.0)
    assert not await any_store.claim_notice(notice.id, "telegram", "1", retake_before=0.0, now=31)
    assert await any_store.claim_notice(notice.id, "line", "U1", retake_before=0.0, now=30.0)
    await any_store.notice_delivered(notice.id, "telegram", "1", "77", 32.0)
    await any_store.notice_sent(notice.id, 33.0)  # LINE's copy is claimed, not yet delivered
    assert len(await any_store.unsent_repeat_notices(0.0)) == 1
    # A claim a crash left behind is taken again once old enough; then the notice is done.
    assert await any_store.claim_notice(notice.id, "line", "U1", retake_before=40.0, now=50.0)
    await any_store.notice_delivered(notice.id, "line", "U1", None, 51.0)
    await any_store.notice_sent(notice.id, 52.0)
    assert await any_store.unsent_repeat_notices(0.0) == []

    # The count goes on (a day later: a rejection is named in one notice a day at most).
    later = await finished_run(any_store, 20.0 + 86400 + 1, repeat(brevity.id, "brief"))
    (again,) = await any_store.unsent_repeat_notices(0.0)
    assert again.run_id == later and [i.total for i in again.items] == [3]
    item = await any_store.repeat_notice_item(again.items[0].id)
    assert item is not None and (item.name, item.content, item.run_id) == (
        "brief",
        "# brief",
        later,
    )
    assert await any_store.repeat_notice_item(10**9) is None


async def test_a_rejection_is_named_once_a_day_and_its_quiet_returns_are_counted(
    any_store: Store,
) -> None:
    (brevity,) = await proposals(any_store, "brevity")
    rejected = {"from_status": "pending", "to_status": "rejected", "by": "web", "at": 3.0}
    assert await any_store.transition(brevity.id, **rejected, tombstone=tombstone(brevity))
    first = await finished_run(any_store, 1000.0, repeat(brevity.id, "short"))
    (notice,) = await any_store.unsent_repeat_notices(0.0)
    assert notice.run_id == first
    await any_store.notice_sent(notice.id, 1001.0)
    # Two more returns within the day: counted, no notice.
    await finished_run(any_store, 5000.0, repeat(brevity.id, "terse"))
    await finished_run(any_store, 9000.0, repeat(brevity.id, "brief"))
    assert await any_store.unsent_repeat_notices(0.0) == []
    # A day after the notice it is named again, with every return since the rejection.
    later = await finished_run(any_store, 1000.0 + 86400 + 1, repeat(brevity.id, "snappy"))
    (again,) = await any_store.unsent_repeat_notices(0.0)
    assert again.run_id == later
    assert [(i.repeats, i.total, i.name) for i in again.items] == [(1, 4, "snappy")]


async def test_the_notices_delivered_to_an_admin_are_counted_since_a_time(
    any_store: Store,
) -> None:
    (brevity,) = await proposals(any_store, "brevity")
    rejected = {"from_status": "pending", "to_status": "rejected", "by": "web", "at": 3.0}
    assert await any_store.transition(brevity.id, **rejected, tombstone=tombstone(brevity))
    await finished_run(any_store, 10.0, repeat(brevity.id, "short"))
    (notice,) = await any_store.unsent_repeat_notices(0.0)
    assert await any_store.claim_notice(notice.id, "telegram", "1", retake_before=0.0, now=20.0)
    assert await any_store.notices_delivered_to("telegram", "1", 0.0) == 0  # claimed only
    await any_store.notice_delivered(notice.id, "telegram", "1", "7", 30.0)
    assert await any_store.notices_delivered_to("telegram", "1", 25.0) == 1
    assert await any_store.notices_delivered_to("telegram", "1", 31.0) == 0
    assert await any_store.notices_delivered_to("line", "1", 0.0) == 0
