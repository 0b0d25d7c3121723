"""Store round trips: a plain text answer costs at most five, on either platform, with daily
limits on or off; an approval at most six, reading the live SKILL.md once. The store's own
entry point counts every unit of work it runs."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from gateway.config import Settings
from gateway.skills.library import SKILL_FILE
from gateway.store import Store
from gateway.usage import utc_day
from tests.cards_support import ALICE, fakes, rig_settings
from tests.cards_support import running as cards_running
from tests.channels.drivers import DRIVERS, running
from tests.console_support import NEW_WRITING, WRITING, seed_proposals
from tests.fakes.openai_server import FakeOpenAI
from tests.synthesis_support import gateway, synth_settings

TEXT_ANSWER = 5
"""Inbox, the chat's state with the turn's start, the answer, where it was sent, done."""
APPROVAL = 6
"""In chat: inbox, the language, the proposal with its skill's row, the decision with the
decider's name, the promotion, done; through the API the middle three."""
LIMITS = {"user_daily_answers": 50, "chat_daily_answers": 50, "daily_token_budget": 10**6}


@contextmanager
def round_trips(store: Store, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The store methods run while the block runs, one entry per unit of work."""
    calls: list[str] = []
    run = store._run

    async def counted(work: Any, **options: Any) -> Any:
        task = asyncio.current_task()
        if task is None or task.get_name() != "review-cards":  # the cards follow on their own
            # The caller is the decorator's wrapper (`gateway.store.sql`), holding the method.
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


async def test_an_approval_takes_at_most_six_store_round_trips_and_one_read_of_the_skill(
    make_settings: Callable[..., Settings],
    fake_llm: FakeOpenAI,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with gateway(synth_settings(make_settings, fake_llm)) as gw:
        ids = await seed_proposals(gw, fake_llm)
        library = gw.parts.review.library
        read = library.read_text
        live_reads: list[str] = []

        def reading(slug: str, name: str = SKILL_FILE) -> str:
            if name == SKILL_FILE:
                live_reads.append(slug)
            return read(slug, name)

        monkeypatch.setattr(library, "read_text", reading)
        with round_trips(gw.parts.store, monkeypatch) as calls:
            status, body = await gw.call("POST", f"/proposals/{ids['update']}/approve")
        assert status == 200 and body["outcome"] == "approved", body
        assert len(calls) <= APPROVAL, calls
        assert live_reads == [WRITING]
        # Its effects, without a rescan: the new text is live, registered and in the index.
        assert NEW_WRITING in (gw.parts.settings.skills_dir / WRITING / SKILL_FILE).read_text()
        offered, section = gw.parts.catalog.offer("a phone chat screen", 800)
        assert WRITING in offered and "short, no tables" in section
        _, skills = await gw.call("GET", "/skills")
        assert {s["name"]: s["review_status"] for s in skills}[WRITING] == "approved"


async def test_an_approval_by_a_chat_admin_takes_at_most_six_store_round_trips(
    make_settings: Callable[..., Settings],
    fake_llm: FakeOpenAI,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with fakes() as (telegram, line):
        settings = rig_settings(make_settings, fake_llm, telegram, line)
        async with cards_running(settings, telegram, line, fake_llm) as rig:
            pid = await rig.propose()
            (card,) = rig.cards_in(ALICE)
            await rig.press(card, "Full diff", user_id=ALICE)  # Alice's language is learnt
            with round_trips(rig.parts.store, monkeypatch) as calls:
                await rig.press(card, "Approve", user_id=ALICE)
            assert len(calls) <= APPROVAL, calls
            assert "chat-brevity" in rig.parts.catalog.enabled
            status, body = await rig.api("GET", "/proposals")
            assert status == 200
            decided = next(p for p in body if p["id"] == pid)
            assert (decided["status"], decided["decided_by"]) == ("approved", f"telegram:{ALICE}")
            # The name shown for the decision was kept with it, and every copy shows it.
            assert await rig.parts.store.reviewer_name(f"telegram:{ALICE}") == "Alice (@alice)"
            edited = [c.params["text"] for c in telegram.calls_of("editMessageText")]
            assert any("Alice" in text for text in edited), edited
