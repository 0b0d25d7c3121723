"""A turn opened with the chat's state (`chat_state`), on SQLite and on PostgreSQL: what the
one statement reads for it (an earlier answer of its update, the user's memory, the name)
and the session its message lands in, as `start_turn` does it."""

from __future__ import annotations

from gateway.core.records import Awaiting, Trace
from gateway.core.turn import TurnStart
from gateway.store import Store
from tests.store.test_store_conversations_backends import rows

IDLE = 60.0


def start(
    now: float,
    text: str = "hi",
    *,
    chat_id: str = "c",
    user_id: str = "u",
    inbox_id: int | None = None,
    memory: bool = False,
    in_group: bool = False,
    user_name: str = "Ann",
) -> TurnStart:
    return TurnStart(
        "telegram",
        chat_id,
        user_id,
        text,
        inbox_id,
        now,
        IDLE,
        10,
        memory=memory,
        in_group=in_group,
        user_name=user_name,
    )


async def test_a_session_continues_and_rolls_over_when_idle_with_its_message(
    any_store: Store,
) -> None:
    first = await any_store.chat_state("telegram", "c", "u", 1000.0, start(1000.0, "one"))
    assert first.turn is not None and first.turn.history is not None
    assert [m.text for m in first.turn.history] == ["one"]
    same = await any_store.chat_state("telegram", "c", "u", 1030.0, start(1030.0, "two"))
    assert same.turn is not None and same.turn.session_id == first.turn.session_id
    assert [m.text for m in same.turn.history or []] == ["one", "two"]
    session = await any_store.get_session(first.turn.session_id)
    assert session is not None and session.last_activity_at == 1030.0

    later = await any_store.chat_state("telegram", "c", "u", 1200.0, start(1200.0, "three"))
    assert later.turn is not None and later.turn.session_id != first.turn.session_id
    assert [m.text for m in later.turn.history or []] == ["three"]
    old = await any_store.get_session(first.turn.session_id)
    assert old is not None
    assert (old.finished_at, old.finish_reason, old.last_activity_at) == (1200.0, "idle", 1030.0)
    assert await any_store.open_session_count() == 1


async def test_an_update_answered_before_comes_back_without_a_second_question(
    any_store: Store,
) -> None:
    item = await any_store.inbox_add("telegram", "1", "c", "{}")
    assert item is not None
    opened = await any_store.chat_state(
        "telegram", "c", "u", 1000.0, start(1000.0, inbox_id=item.id)
    )
    assert opened.turn is not None and not opened.turn.resumed
    again = await any_store.chat_state(
        "telegram", "c", "u", 1001.0, start(1001.0, inbox_id=item.id)
    )
    assert again.turn is not None and again.turn.resumed and again.turn.answer is None
    assert again.turn.session_id == opened.turn.session_id
    answer = await any_store.add_answer(
        opened.turn.session_id,
        "hello",
        kind="normal",
        inbox_id=item.id,
        trace=Trace(),
        now=1002.0,
        user_id="u",
    )
    done = await any_store.chat_state("telegram", "c", "u", 1003.0, start(1003.0, inbox_id=item.id))
    assert done.turn is not None and done.turn.answer is not None
    assert done.turn.answer.id == answer.id
    asked = await rows(any_store, "select count(*) as n from messages where role = 'user'")
    assert asked[0]["n"] == 1


async def test_the_users_memory_comes_with_the_state_in_order_and_in_a_group_after_opting_in(
    any_store: Store,
) -> None:
    for i, text in enumerate(["likes tea", "lives in Osaka", "has a cat"]):
        await any_store.remember("telegram", "u", text, limit_chars=1000, now=900.0 + i)
    await any_store.remember("telegram", "v", "someone else", limit_chars=1000, now=900.0)
    alone = await any_store.chat_state("telegram", "c", "u", 1000.0, start(1000.0, memory=True))
    assert alone.turn is not None
    assert alone.turn.memory == ["likes tea", "lives in Osaka", "has a cat"]
    off = await any_store.chat_state("telegram", "c", "u", 1001.0, start(1001.0))
    assert off.turn is not None and off.turn.memory is None

    def group(now: float) -> TurnStart:
        return start(now, chat_id="g", memory=True, in_group=True)

    before = await any_store.chat_state("telegram", "g", "u", 1002.0, group(1002.0))
    assert before.turn is not None and before.turn.memory is None
    await any_store.set_memory_opt_in("telegram", "g", "u", True, 1003.0)
    after = await any_store.chat_state("telegram", "g", "u", 1004.0, group(1004.0))
    assert after.turn is not None and after.turn.memory == alone.turn.memory

    nobody = await any_store.chat_state(
        "telegram", "d", "w", 1005.0, start(1005.0, chat_id="d", user_id="w", memory=True)
    )
    assert nobody.turn is not None and nobody.turn.memory == []


async def test_the_name_is_remembered_where_the_turn_opens_not_where_a_question_is_open(
    any_store: Store,
) -> None:
    await any_store.chat_state("telegram", "c", "u", 1000.0, start(1000.0))
    await any_store.chat_state("telegram", "c", "u", 1001.0, start(1001.0, user_name="Ann B"))
    names = "select name, updated_at from user_names where user_id = 'u'"
    assert await rows(any_store, names) == [{"name": "Ann B", "updated_at": 1001.0}]
    question = Awaiting(
        channel="telegram",
        chat_id="c",
        user_id="u",
        purpose="comment",
        ref="1",
        expires_at=2000.0,
        created_at=1002.0,
    )
    await any_store.set_awaiting(question)
    asked = await any_store.chat_state("telegram", "c", "u", 1003.0, start(1003.0, user_name="X"))
    assert asked.awaiting is not None and asked.turn is None
    assert await rows(any_store, names) == [{"name": "Ann B", "updated_at": 1001.0}]
