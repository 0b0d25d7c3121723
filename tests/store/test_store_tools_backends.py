"""Tool confirmations and tool usage on both databases: a press decides once, for its asker."""

from __future__ import annotations

from gateway.core.records import Trace
from gateway.store import Store
from tests.store_support import current_session

DAY = 86400.0
D = "0123456789abcdef"
"""The digest of the arguments a confirmation is asked for."""
DEC_1 = 1796083200.0 + 3600.0
"""2026-12-01, 01:00 UTC."""


async def test_only_the_askers_first_press_in_time_decides(any_store: Store) -> None:
    ask = await any_store.open_confirmation(
        "telegram", "c1", "u1", "git__git_add", "{}", digest=D, expires_at=200.0, now=100.0
    )
    assert await any_store.confirmation_decision(ask) is None
    # A press signed for other arguments is not a press for these.
    other = await any_store.press_confirmation(
        ask, "telegram", "u1", "approved", digest="fedcba9876543210", now=110
    )
    assert other == "missing"
    assert await any_store.press_confirmation(
        ask, "telegram", "u2", "approved", digest=D, now=110
    ) == ("foreign")
    assert await any_store.press_confirmation(ask, "line", "u1", "approved", digest=D, now=110) == (
        "missing"
    )
    assert await any_store.press_confirmation(
        ask, "telegram", "u1", "declined", digest=D, now=120
    ) == ("decided")
    assert await any_store.press_confirmation(
        ask, "telegram", "u1", "approved", digest=D, now=121
    ) == ("already")
    assert await any_store.confirmation_decision(ask) == "declined"
    assert await any_store.expire_confirmation(ask, now=300) == "declined"  # the press stands


async def test_an_expired_confirmation_takes_no_press(any_store: Store) -> None:
    ask = await any_store.open_confirmation(
        "line", "c1", "u1", "web_fetch", "{}", digest=D, expires_at=200.0, now=100.0
    )
    assert await any_store.press_confirmation(ask, "line", "u1", "approved", digest=D, now=201) == (
        "already"
    )
    assert await any_store.expire_confirmation(ask, now=201) == "expired"
    assert await any_store.confirmation_decision(ask) == "expired"


async def test_tool_calls_are_counted_per_day_tool_and_status_with_their_answer(
    any_store: Store,
) -> None:
    session = await current_session(any_store, "telegram", "c1", "u1", 1000.0, 60)
    clock = "time__get_current_time"
    for at, calls in [
        (DEC_1, [(clock, "ok"), ("git__git_add", "declined"), (clock, "ok")]),
        (DEC_1 + 60, [(clock, "ok")]),
        (DEC_1 + DAY, [(clock, "timeout")]),
        (DEC_1 + DAY, []),
    ]:
        await any_store.add_answer(
            session.id,
            "a",
            kind="normal",
            inbox_id=None,
            trace=Trace(),
            now=at,
            user_id="u1",
            tools=calls,
        )
    assert await any_store.tool_usage("2026-12-01") == [
        ("2026-12-01", "git__git_add", "declined", 1),
        ("2026-12-01", clock, "ok", 3),
        ("2026-12-02", clock, "timeout", 1),
    ]
    assert await any_store.tool_usage("2026-12-02") == [("2026-12-02", clock, "timeout", 1)]


async def test_forgetting_a_user_deletes_the_confirmations_they_were_asked(
    any_store: Store,
) -> None:
    mine = await any_store.open_confirmation(
        "telegram",
        "c1",
        "u1",
        "git__git_add",
        '{"files": ["diary.txt"]}',
        digest=D,
        expires_at=200.0,
    )
    theirs = await any_store.open_confirmation(
        "telegram", "c2", "u2", "git__git_add", "{}", digest=D, expires_at=200.0
    )
    await any_store.forget_user("telegram", "u1", 100.0)
    assert await any_store.press_confirmation(
        mine, "telegram", "u1", "approved", digest=D, now=1
    ) == ("missing")
    assert await any_store.confirmation_decision(theirs) is None
