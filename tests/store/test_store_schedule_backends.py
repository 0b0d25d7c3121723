"""Scheduled tasks in the store, on SQLite and on a real PostgreSQL server: claimed only while
due and by one holder at a time, every write after the claim fenced by its claim number."""

from __future__ import annotations

import asyncio

from gateway.core.scheduled import NewTask, ScheduledTask, TaskRun
from gateway.store import Store


def reminder(next_at: float, text: str = "water the plants", **more: object) -> NewTask:
    values: dict[str, object] = {
        "channel": "telegram",
        "chat_id": "42",
        "user_id": "42",
        "kind": "reminder",
        "text": text,
        "timezone": "Asia/Tokyo",
        "next_at": next_at,
    }
    return NewTask.model_validate(values | more)


def ran(task: ScheduledTask, outcome: str = "sent", at: float = 0.0) -> TaskRun:
    assert task.next_at is not None
    return TaskRun.model_validate(
        {"task_id": task.id, "due_at": task.next_at, "outcome": outcome, "ran_at": at}
    )


async def test_a_task_is_claimed_only_when_due_and_by_one_holder(any_store: Store) -> None:
    task = await any_store.task_add(reminder(100.0), now=1.0)
    assert task.status == "active" and task.claim == 0
    assert await any_store.task_claim("a", 30.0, limit=10, now=99.0) == []  # not due yet
    (claimed,) = await any_store.task_claim("a", 30.0, limit=10, now=100.0)
    assert (claimed.id, claimed.claimed_by, claimed.claim) == (task.id, "a", 1)
    assert await any_store.task_claim("b", 30.0, limit=10, now=110.0) == []  # the lease runs
    assert await any_store.task_fence("a", task.id, 1, 30.0, now=120.0)  # ...and is extended
    assert await any_store.task_claim("b", 30.0, limit=10, now=140.0) == []


async def test_a_claim_taken_over_fences_out_its_old_holder(any_store: Store) -> None:
    task = await any_store.task_add(reminder(100.0))
    (first,) = await any_store.task_claim("a", 30.0, limit=10, now=100.0)
    (second,) = await any_store.task_claim("b", 30.0, limit=10, now=131.0)  # a stalled
    assert second.claim == first.claim + 1
    assert not await any_store.task_fence("a", task.id, first.claim, 30.0, now=132.0)
    assert await any_store.task_renew("a", [(task.id, first.claim)], 30.0, now=132.0) == []
    assert not await any_store.task_finish(first, ran(first, at=133.0), None)
    assert await any_store.task_runs(task.id) == []  # nothing recorded by the old holder
    assert await any_store.task_renew("b", [(task.id, second.claim)], 30.0, now=133) == [task.id]
    assert await any_store.task_finish(second, ran(second, at=134.0), None)
    done = await any_store.task_get(task.id)
    assert done is not None and (done.status, done.next_at, done.claimed_by) == ("done", None, None)
    assert [(r.outcome, r.due_at) for r in await any_store.task_runs(task.id)] == [("sent", 100.0)]
    assert await any_store.task_claim("c", 30.0, limit=10, now=1000.0) == []


async def test_a_repeating_task_moves_to_its_next_time_and_is_claimed_again(
    any_store: Store,
) -> None:
    task = await any_store.task_add(reminder(100.0, repeat="daily", cron="0 9 * * *"))
    (claimed,) = await any_store.task_claim("a", 30.0, limit=10, now=100.0)
    assert await any_store.task_finish(claimed, ran(claimed, "late", 101.0), 200.0)
    moved = await any_store.task_get(task.id)
    assert moved is not None
    assert (moved.status, moved.next_at, moved.last_outcome, moved.claimed_by) == (
        "active",
        200.0,
        "late",
        None,
    )
    assert await any_store.task_claim("a", 30.0, limit=10, now=150.0) == []
    (again,) = await any_store.task_claim("b", 30.0, limit=10, now=200.0)
    assert again.claim == 2 and again.next_at == 200.0


async def test_a_failed_delivery_gives_its_claim_back_until_its_retry(any_store: Store) -> None:
    await any_store.task_add(reminder(100.0))
    (claimed,) = await any_store.task_claim("a", 30.0, limit=10, now=100.0)
    assert await any_store.task_retry_later(claimed, 160.0)
    assert not await any_store.task_retry_later(claimed, 160.0)  # the claim is given back
    assert await any_store.task_claim("b", 30.0, limit=10, now=159.0) == []
    (retried,) = await any_store.task_claim("b", 30.0, limit=10, now=161.0)
    assert retried.failures == 1 and retried.claim == 2


async def test_the_most_overdue_are_claimed_first_up_to_the_limit(any_store: Store) -> None:
    ids = [(await any_store.task_add(reminder(float(at)))).id for at in (300, 100, 200)]
    claimed = await any_store.task_claim("a", 30.0, limit=2, now=400.0)
    assert [t.id for t in claimed] == [ids[1], ids[2]]
    assert await any_store.task_release("a") == 2
    assert [t.id for t in await any_store.task_claim("b", 30.0, limit=5, now=400.0)] == [
        ids[1],
        ids[2],
        ids[0],
    ]


async def test_forgetting_a_user_deletes_their_tasks_and_export_lists_them(
    any_store: Store,
) -> None:
    mine = await any_store.task_add(reminder(100.0, "my secret errand"))
    other = await any_store.task_add(reminder(100.0, chat_id="7", user_id="7"))
    (claimed, _) = await any_store.task_claim("a", 30.0, limit=10, now=100.0)
    assert await any_store.task_finish(claimed, ran(claimed, at=101.0), None)
    exported = await any_store.export_user("telegram", "42")
    (task,) = exported["scheduled_tasks"]
    assert (task["text"], task["status"]) == ("my secret errand", "done")
    assert [r["outcome"] for r in task["runs"]] == ["sent"]
    forgotten = await any_store.forget_user("telegram", "42", 200.0)
    assert forgotten.tasks == 1
    assert await any_store.task_get(mine.id) is None
    assert await any_store.task_runs(mine.id) == []
    assert await any_store.task_get(other.id) is not None


async def test_retention_deletes_old_occurrences_and_finished_tasks_but_not_active_ones(
    any_store: Store,
) -> None:
    once = await any_store.task_add(reminder(100.0), now=50.0)
    daily = await any_store.task_add(reminder(100.0, repeat="daily", cron="0 9 * * *"), now=50.0)
    for claimed in await any_store.task_claim("a", 30.0, limit=10, now=100.0):
        following = 86_500.0 if claimed.id == daily.id else None
        assert await any_store.task_finish(claimed, ran(claimed, at=101.0), following)
    await any_store.delete_old_sessions(1000.0, 1000.0)
    assert await any_store.task_get(once.id) is None  # finished, its record expired
    kept = await any_store.task_get(daily.id)
    assert kept is not None and kept.status == "active"
    assert await any_store.task_runs(daily.id) == []


async def test_a_users_timezone_and_own_tasks_are_theirs_alone(any_store: Store) -> None:
    assert await any_store.user_timezone("telegram", "42") is None
    await any_store.set_user_timezone("telegram", "42", "Asia/Tokyo", now=1.0)
    await any_store.set_user_timezone("telegram", "42", "Europe/Paris", now=2.0)  # replaced
    assert await any_store.user_timezone("telegram", "42") == "Europe/Paris"
    assert await any_store.user_timezone("line", "42") is None  # per channel
    later = await any_store.task_add(reminder(200.0, "later"))
    sooner = await any_store.task_add(reminder(100.0, "sooner"))
    other = await any_store.task_add(reminder(50.0, "theirs", chat_id="43", user_id="43"))
    await any_store.task_add(reminder(60.0, "in a group", chat_id="-7"))
    mine = await any_store.tasks_of("telegram", "42", "42")
    assert [t.text for t in mine] == ["sooner", "later"]  # this chat, next due first
    assert await any_store.task_cancel_own(other.id, "telegram", "42") is None  # not theirs
    assert await any_store.task_cancel_own(sooner.id, "line", "42") is None  # another channel
    assert await any_store.task_cancel_own(sooner.id, "telegram", "42") == "sooner"
    assert await any_store.task_cancel_own(sooner.id, "telegram", "42") is None  # once
    assert [t.id for t in await any_store.tasks_of("telegram", "42", "42")] == [later.id]
    kept = await any_store.task_get(other.id)
    assert kept is not None and kept.status == "active"
    assert (await any_store.export_user("telegram", "42"))["timezone"] == "Europe/Paris"
    await any_store.forget_user("telegram", "42", 3.0)
    assert await any_store.user_timezone("telegram", "42") is None
    assert (await any_store.export_user("telegram", "42"))["timezone"] is None


async def test_a_user_holds_at_most_the_limit_even_when_adding_at_once(any_store: Store) -> None:
    tries = [any_store.task_add_held(reminder(100.0, f"t{n}", chat_id=str(n)), 3) for n in range(8)]
    made = await asyncio.gather(*tries)
    assert len([t for t in made if t is not None]) == 3
    other = await any_store.task_add_held(reminder(100.0, user_id="43", chat_id="43"), 3)
    assert other is not None  # each user's own count
    held = [t for t in made if t is not None]
    assert await any_store.task_cancel(held[0].id)
    assert await any_store.task_add_held(reminder(100.0, "again"), 3) is not None
    assert await any_store.task_add_held(reminder(100.0, "past"), 3) is None


async def test_a_channels_active_tasks_due_before_a_time_are_what_its_quota_counts(
    any_store: Store,
) -> None:
    sooner = await any_store.task_add(reminder(100.0, "sooner", channel="line"))
    later = await any_store.task_add(reminder(300.0, "later", channel="line"))
    await any_store.task_add(reminder(150.0, "telegram's"))  # another channel
    paused = await any_store.task_add(reminder(120.0, "paused", channel="line"))
    await any_store.task_set_paused(paused.id, True)
    past_it = await any_store.task_add(reminder(500.0, "next month", channel="line"))
    found = await any_store.tasks_due_before("line", 400.0)
    assert [t.id for t in found] == [sooner.id, later.id]
    assert past_it.id not in [t.id for t in await any_store.tasks_due_before("line", 500.0)]
