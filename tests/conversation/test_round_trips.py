"""Store round trips: a plain text answer costs at most four on Telegram, five on LINE, with daily
limits on or off, and so does one that calls tools (their counts go with the answer); a 👍 or
👎 at most five; an approval at most six, reading the live SKILL.md once. The store's own
entry point counts every unit of work it runs."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from gateway.config import Settings
from gateway.skills.library import SKILL_FILE
from gateway.store import Store
from gateway.usage import utc_day
from tests.cards_support import ALICE, BOB, LINE_ADMIN, fakes, rig_settings
from tests.cards_support import running as cards_running
from tests.channels.drivers import DRIVERS, running
from tests.console_support import NEW_WRITING, WRITING, seed_proposals
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import html_to_plain
from tests.store_support import quota_counts
from tests.synthesis_support import gateway, synth_settings
from tests.tools.http_server import ToyServer
from tests.tools.support import tools_file

TEXT_ANSWER = {"telegram": 4, "line": 5}
"""Inbox, the chat's state with the turn's start, the answer, and done with where it was sent
(Telegram); LINE records where it was sent with its delivery's batch, then done."""
APPROVAL = 6
"""In chat: inbox, the language, the proposal with its skill's row, the decision with the
decider's name, the promotion, done; through the API the middle three."""
PRESS = 5
"""Inbox, the press's state with its rating, after 👎 where the prompt went (LINE) and the
question asked (after 👍 the question closed), done."""
PRESS_TRIPS = {"telegram": [4, 3, 4, 4], "line": [5, 3, 4, 5]}
"""Each press of the test: Telegram asks by a prompt whose reply answers it (its id is kept
with the question); LINE's prompt is recorded as it goes by the press's reply token."""
CARD_REFRESH = 7
"""After a decision in chat, on the cards' own task: the copies with their admins' languages,
what the card shows (the evidence, the decider's name, the text it replaced), a notice to the
LINE admin (its retry key, then its delivery), and what the copies show now, in one write."""
LIMITS = {"user_daily_answers": 50, "chat_daily_answers": 50, "daily_token_budget": 10**6}


@contextmanager
def round_trips(
    store: Store, monkeypatch: pytest.MonkeyPatch, cards: list[str] | None = None
) -> Iterator[list[str]]:
    """The store methods run while the block runs, one entry per unit of work; those of the
    proposal cards, which follow on their own task, go to `cards` (if given) instead."""
    calls: list[str] = []
    run = store._run

    async def counted(work: Any, **options: Any) -> Any:
        task = asyncio.current_task()
        # The caller is the decorator's wrapper (`gateway.store.sql`), holding the method.
        method = sys._getframe(1).f_locals.get("method")
        name = getattr(method, "__name__", repr(work))
        if task is None or task.get_name() != "review-cards":
            calls.append(name)
        elif cards is not None:
            cards.append(name)
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
        assert len(calls) <= TEXT_ANSWER[name], calls
        if limits:  # both answers were counted, and their tokens added, in those few trips
            today = await quota_counts(store, utc_day(time.time()))
            user = next(c for c in today if c.scope == "user")
            assert user.answers == 2 and user.tokens > 0


@pytest.mark.parametrize("name", DRIVERS)
async def test_an_answer_that_calls_tools_takes_no_more_store_round_trips_than_a_text_answer(
    name: str,
    make_settings: Callable[..., Settings],
    fake_llm: FakeOpenAI,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with ToyServer().running() as toy:
        path = tools_file(tmp_path, servers={"toy": {"url": toy.url, "trusted": True}})
        async with running(name, make_settings, fake_llm, tools_file=path) as chat:
            await chat.say("hello")
            store = chat.parts.store
            fake_llm.tool_call("toy__weather")
            fake_llm.tool_call("toy__echo")  # no text: the server answers with an error
            fake_llm.tool_call("toy__weather")
            fake_llm.reply("Sunny.")
            with round_trips(store, monkeypatch) as calls:
                await chat.say("weather?")
            assert chat.texts()[-1] == "Sunny."
            assert len(calls) <= TEXT_ANSWER[name], calls
            # Counted with the answer: the day's usage and /metrics have every call.
            usage = await store.tool_usage(utc_day(time.time()))
            metrics = await (await chat.client.get("/metrics")).text()
    assert [(tool, status, n) for _, tool, status, n in usage] == [
        ("toy__echo", "error", 1),
        ("toy__weather", "ok", 2),
    ]
    assert 'skillgate_tool_calls_total{status="ok",tool="toy__weather"} 2.0' in metrics
    assert 'skillgate_tool_calls_total{status="error",tool="toy__echo"} 1.0' in metrics


@pytest.mark.parametrize("name", DRIVERS)
async def test_a_rating_press_takes_at_most_five_store_round_trips(
    name: str,
    make_settings: Callable[..., Settings],
    fake_llm: FakeOpenAI,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with running(name, make_settings, fake_llm) as chat:
        await chat.say("hello")
        up, down = chat.rating_data()
        store = chat.parts.store
        trips: list[list[str]] = []
        for data in (down, down, up, down):  # asked, not again, the question closed, asked
            with round_trips(store, monkeypatch) as calls:
                await chat.press(data)
            trips.append(calls)
        assert max(len(calls) for calls in trips) <= PRESS, trips
        # Exactly: a trip added anywhere fails here, even below the bound.
        assert [len(calls) for calls in trips] == PRESS_TRIPS[name], trips
        (rating,) = await store.list_feedback()
        assert rating.rating == -1
        await chat.answer_question("too short")
        assert [f.comment for f in await store.list_feedback()] == ["too short"]
        assert sum(t.startswith("What went wrong?") for t in chat.texts()) == 2


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


async def test_an_approval_by_a_chat_admin_takes_at_most_six_store_round_trips_and_its_cards_seven(
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
            refresh: list[str] = []
            with round_trips(rig.parts.store, monkeypatch, cards=refresh) as calls:
                await rig.press(card, "Approve", user_id=ALICE)  # and the cards are idle again
            assert len(calls) <= APPROVAL, calls
            # Bob's copy edited, the LINE admin told; built from the decision's own proposal.
            assert len(refresh) <= CARD_REFRESH, refresh
            assert "get_proposal" not in refresh
            (shown,) = [
                c for c in telegram.calls_of("editMessageText") if c.params["chat_id"] == BOB
            ]
            assert "Approved by Alice" in html_to_plain(shown.params["text"])
            assert any("Alice" in t for t in line.delivered_texts(LINE_ADMIN))
            assert "chat-brevity" in rig.parts.catalog.enabled
            status, body = await rig.api("GET", "/proposals")
            assert status == 200
            decided = next(p for p in body if p["id"] == pid)
            assert (decided["status"], decided["decided_by"]) == ("approved", f"telegram:{ALICE}")
            # The name shown for the decision was kept with it, and every copy shows it.
            assert await rig.parts.store.reviewer_name(f"telegram:{ALICE}") == "Alice (@alice)"
            edited = [c.params["text"] for c in telegram.calls_of("editMessageText")]
            assert any("Alice" in text for text in edited), edited
