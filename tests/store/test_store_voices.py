"""Spoken answers in the store, on SQLite and PostgreSQL alike: each user's /voice choice
(read with the chat's state, in its one statement), the seconds each answer was spoken,
and what /forget takes of them."""

from __future__ import annotations

from gateway.core.records import Trace
from gateway.core.turn import QuotaSpend
from gateway.store import Store
from tests.store_support import add_message, current_session


async def test_the_voice_choice_is_kept_per_user_and_read_with_the_chat_state(
    any_store: Store,
) -> None:
    state = await any_store.chat_state("line", "G1", "U1", 100.0)
    assert state.language.voice is None
    await any_store.choose_voice("line", "U1", "on", now=100.0)
    await any_store.choose_voice("line", "U2", "off", now=100.0)
    assert (await any_store.chat_state("line", "G1", "U1", 101.0)).language.voice == "on"
    assert (await any_store.chat_state("line", "U2", "U2", 101.0)).language.voice == "off"
    assert (await any_store.chat_state("telegram", "U1", "U1", 101.0)).language.voice is None
    await any_store.choose_voice("line", "U1", "auto", now=102.0)
    assert (await any_store.language_state("line", "G1", "U1")).voice == "auto"
    await any_store.choose_voice("line", "U1", None)
    assert (await any_store.language_state("line", "G1", "U1")).voice is None


async def test_spoken_seconds_are_counted_per_user_and_day_and_go_with_forget(
    any_store: Store,
) -> None:
    session = await current_session(any_store, "telegram", "7", "7", 1000.0, 60)
    first = await add_message(
        any_store, session.id, "assistant", "a", trace=Trace(), now=1000.0, user_id="7"
    )
    second = await add_message(
        any_store, session.id, "assistant", "b", trace=Trace(), now=2000.0, user_id="7"
    )
    spent = QuotaSpend("1970-01-01", (("user", "telegram:7", 0), ("gateway", "", 0)), 0, 0.25)
    await any_store.record_spoken(first.id, 2.5, spent)
    await any_store.record_spoken(second.id, 1.5)
    assert await any_store.spoken_by("telegram", "7", 0.0) == 4.0
    assert await any_store.spoken_by("telegram", "7", 1500.0) == 1.5
    assert await any_store.spoken_by("line", "7", 0.0) == 0.0
    assert await any_store.spoken_seconds(0.0, 1500.0) == 2.5
    await any_store.choose_voice("telegram", "7", "on")
    await any_store.forget_user("telegram", "7", 3000.0)
    assert await any_store.spoken_by("telegram", "7", 0.0) == 0.0
    assert (await any_store.language_state("telegram", "7", "7")).voice is None
