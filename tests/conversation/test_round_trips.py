"""Store round trips: a plain text answer costs at most five, on either platform, with daily
limits on or off; the store's own entry point counts every unit of work it runs."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from gateway.config import Settings
from gateway.store import Store
from gateway.usage import utc_day
from tests.channels.drivers import DRIVERS, running
from tests.fakes.openai_server import FakeOpenAI

TEXT_ANSWER = 5
"""Inbox, the chat's state with the turn's start, the answer, where it was sent, done."""
LIMITS = {"user_daily_answers": 50, "chat_daily_answers": 50, "daily_token_budget": 10**6}


@contextmanager
def round_trips(store: Store, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The store methods run while the block runs, one entry per unit of work."""
    calls: list[str] = []
    run = store._run

    async def counted(work: Any, **options: Any) -> Any:
        # The caller is the decorator's wrapper (`gateway.store.sql`), which holds the method.
        method = sys._getframe(1).f_locals.get("method")
        calls.append(getattr(method, "__name__", repr(work)))
        return await run(work, **options)

    monkeypatch.setattr(store, "_run", counted)
    try:
        yield calls
    finally:
        monkeypatch.setattr(store, "_run", run)


@pytest.mark.parametrize("limits", [{}, LIMITS], ids=["no-limits", "daily-limits"])
@pytest.mark.parametrize("name", DRIVERS)
async def test_a_text_answer_takes_at_most_five_store_round_trips(
    name: str,
    limits: dict[str, Any],
    make_settings: Callable[..., Settings],
    fake_llm: FakeOpenAI,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with running(name, make_settings, fake_llm, **limits) as chat:
        await chat.say("hello")  # a user's first message also learns their language
        store = chat.parts.store
        with round_trips(store, monkeypatch) as calls:
            await chat.say("how are you?")
        assert chat.texts()[-1] == "Hello from the fake model."
        assert len(calls) <= TEXT_ANSWER, calls
        if limits:  # both answers were counted, and their tokens added, in those few trips
            today = await store.quota_counts(utc_day(time.time()))
            user = next(c for c in today if c.scope == "user")
            assert user.answers == 2 and user.tokens > 0
