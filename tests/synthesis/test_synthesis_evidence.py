"""What a pass reads: finished sessions with a signal, each once, in bounded batches."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from gateway.config import Settings
from gateway.core.tokens import estimate_tokens
from gateway.synthesis.evidence import MAX_SHOWINGS
from tests.fakes.openai_server import FakeOpenAI
from tests.store_support import add_message, current_session
from tests.synthesis_support import (
    answer,
    evidence_prompt,
    gateway,
    proposal,
    synth_settings,
)


def shown_sessions(body: dict[str, Any]) -> list[int]:
    """Session ids fenced in a recorded synthesis request."""
    text = evidence_prompt(body)
    return [int(i) for i in re.findall(r'<untrusted-chat-[0-9a-f]{12} session="(\d+)"', text)]


def record_prompts(fake_llm: FakeOpenAI) -> None:
    fake_llm.default = lambda body: answer()


async def test_sessions_without_a_signal_are_consumed_without_being_shown(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm, evidence_window_days=0)
    record_prompts(fake_llm)
    async with gateway(settings) as gw:
        rated_down = await gw.seed(rating=-1)
        failed = await gw.seed(rating=None, failed=True)
        rated_up = await gw.seed(rating=1, comment=None)
        await gw.seed(rating=None)  # answered fine, nobody rated it
        store = gw.parts.store
        lonely = await current_session(store, "telegram", "alone", "u1", 1000.0, 60)
        await add_message(store, lonely.id, "user", "hello?")  # no answer: too short
        await store.finish_chat_session("telegram", "alone")

        run = await gw.synthesize()
        assert (run["sessions"], run["skipped"], run["batches"]) == (3, 2, 1)
        (body,) = fake_llm.requests
        assert shown_sessions(body) == [rated_down, failed, rated_up]
        prompt = evidence_prompt(body)
        assert 'rating: 👎 comment: "far too long for a chat"' in prompt
        assert "FAILED: ModelUnavailable" in prompt and "rating: 👍" in prompt

        again = await gw.synthesize()
        assert (again["sessions"], again["skipped"]) == (0, 0)
        assert len(fake_llm.requests) == 1


async def test_only_finished_sessions_are_read(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(
        make_settings, fake_llm, session_idle_minutes=30, evidence_window_days=0
    )
    record_prompts(fake_llm)
    async with gateway(settings) as gw:
        ended = await gw.seed()  # finished with /new
        idle = await gw.seed(finished=False, at=time.time() - 3600)  # idle past the timeout
        active = await gw.seed(finished=False, at=time.time(), chat="active")  # still going on
        await gw.synthesize()
        assert shown_sessions(fake_llm.requests[-1]) == [ended, idle]

        assert await gw.parts.store.finish_chat_session("telegram", "active", "new")
        await gw.synthesize()
        assert shown_sessions(fake_llm.requests[-1]) == [active]


async def test_batches_are_bounded_in_sessions_so_calls_grow_with_batches(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm, synthesis_batch_sessions=2)
    record_prompts(fake_llm)
    async with gateway(settings) as gw:
        ids = [await gw.seed() for _ in range(5)]
        run = await gw.synthesize()
        assert (run["sessions"], run["batches"]) == (5, 3)
        assert [shown_sessions(b) for b in fake_llm.requests] == [ids[:2], ids[2:4], ids[4:]]


async def test_batches_are_bounded_in_tokens(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm, synthesis_batch_tokens=600)
    record_prompts(fake_llm)
    long_answer = "A detailed paragraph about reminders. " * 30  # about 300 tokens
    async with gateway(settings) as gw:
        ids = [await gw.seed(answer=long_answer) for _ in range(3)]
        run = await gw.synthesize()
        assert run["batches"] == 3
        assert [shown_sessions(b) for b in fake_llm.requests] == [[i] for i in ids]
        for body in fake_llm.requests:
            evidence = evidence_prompt(body).split("finished session(s)", 1)[1]
            assert estimate_tokens(evidence) <= 600


async def test_at_most_n_proposals_per_run_and_the_rest_waits_for_the_next(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(
        make_settings, fake_llm, max_proposals_per_run=1, synthesis_batch_sessions=1
    )
    async with gateway(settings) as gw:
        first, second = await gw.seed(), await gw.seed()
        fake_llm.reply(
            answer(
                proposal("chat-brevity"),
                proposal("unit-conversions", description="Units.", content="Metric first."),
            )
        )
        run = await gw.synthesize()
        assert [p["name"] for p in run["proposed"]] == ["chat-brevity"]
        assert run["refused"] == [
            {
                "name": "unit-conversions",
                "reason": "over the limit of 1 proposals per run",
                "matched": None,
                "matched_skill": None,
                "detail": None,
            }
        ]
        assert len(fake_llm.requests) == 1  # the cap was reached: no second batch
        assert "At most 1 proposals." in fake_llm.system_prompt()
        assert shown_sessions(fake_llm.requests[0]) == [first]

        fake_llm.reply(answer())
        await gw.synthesize()
        assert shown_sessions(fake_llm.requests[1]) == [second]


DAY = 86400.0


async def test_evidence_stays_eligible_for_the_window_so_complaints_a_week_apart_meet(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    # Batches of one session: a session shown twice in one pass would be a second request.
    settings = synth_settings(make_settings, fake_llm, synthesis_batch_sessions=1)
    assert settings.evidence_window_days == 14  # the default
    record_prompts(fake_llm)
    async with gateway(settings) as gw:
        start = time.time()
        monday = await gw.seed(comment="far too long for a chat")
        await gw.synthesize()  # one complaint: the model proposes nothing
        assert [shown_sessions(b) for b in fake_llm.requests] == [[monday]]

        # A week later a second complaint: the first one is shown again, each once.
        gw.parts.synthesizer.clock = lambda: start + 7 * DAY
        sunday = await gw.seed(comment="way too long again")
        fake_llm.requests.clear()
        await gw.synthesize()
        assert [shown_sessions(b) for b in fake_llm.requests] == [[monday], [sunday]]

        # Nothing new: no call at all, however much older evidence waits.
        gw.parts.synthesizer.config = replace(gw.parts.synthesizer.config, batch_sessions=20)
        fake_llm.requests.clear()
        assert (await gw.synthesize())["sessions"] == 0 and fake_llm.requests == []

        # A third complaint: the older ones come back beside it, in one batch, and together
        # they lead to a proposal; its sources are then consumed.
        tuesday = await gw.seed(comment="too long for my phone")
        fake_llm.reply(answer(proposal(based_on=[monday, sunday, tuesday])))
        run = await gw.synthesize()
        (shown,) = [shown_sessions(b) for b in fake_llm.requests]
        assert sorted(shown) == [monday, sunday, tuesday] and shown[-1] == tuesday
        (made,) = run["proposed"]
        based_on = (await gw.call("GET", f"/proposals/{made['id']}"))[1]["based_on"]
        assert based_on == [monday, sunday, tuesday]
        fake_llm.requests.clear()
        assert (await gw.synthesize())["sessions"] == 0 and fake_llm.requests == []

        # Evidence older than the window is not read again.
        late = await gw.seed(comment="too long")
        gw.parts.synthesizer.clock = lambda: start + 15 * DAY
        assert (await gw.synthesize())["sessions"] == 0
        gw.parts.synthesizer.clock = lambda: start + 13 * DAY
        assert (await gw.synthesize())["sessions"] == 1 and late


async def test_nothing_is_proposed_again_from_evidence_a_rejection_answered(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    record_prompts(fake_llm)
    async with gateway(settings) as gw:
        first, second = await gw.seed(), await gw.seed()
        fake_llm.reply(answer(proposal(based_on=[first, second])))
        (made,) = (await gw.synthesize())["proposed"]
        assert (await gw.call("POST", f"/proposals/{made['id']}/reject"))[0] == 200

        # The rejected proposal's sessions are never shown again; a new one is.
        third = await gw.seed(comment="still far too long")
        fake_llm.requests.clear()
        fake_llm.reply(
            answer(proposal(content="#  BREVITY\n" + "Answer briefly.", based_on=[third]))
        )
        run = await gw.synthesize()
        assert [shown_sessions(b) for b in fake_llm.requests] == [[third]]
        # A repeat of the rejection is suppressed, and its evidence counts as answered too.
        assert [s["matched"] for s in run["suppressed"]] == [made["id"]]
        fake_llm.requests.clear()
        assert (await gw.synthesize())["sessions"] == 0 and fake_llm.requests == []


async def test_older_evidence_returns_only_beside_like_fresh_evidence_and_a_few_times_in_all(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    record_prompts(fake_llm)
    async with gateway(settings) as gw:
        long = await gw.seed(comment="far too long for a chat")
        units = await gw.seed(
            question="How far is it from Paris to Lyon?",
            answer="About 290 miles.",
            comment="miles? use kilometres",
        )
        await gw.synthesize()
        assert [sorted(shown_sessions(b)) for b in fake_llm.requests] == [[long, units]]
        for n in range(MAX_SHOWINGS + 1):
            fake_llm.requests.clear()
            fresh = await gw.seed(comment=f"too long again, a chat reply should be short {n}")
            await gw.synthesize()
            (shown,) = [shown_sessions(b) for b in fake_llm.requests]
            # The complaint about length comes back beside new ones about length, never the
            # one about units, and not after it was shown MAX_SHOWINGS times.
            assert units not in shown and shown[-1] == fresh
            assert (long in shown) == (n < MAX_SHOWINGS - 1), (n, shown)

        # A new rating on an older session makes it fresh evidence again.
        fake_llm.requests.clear()
        (reply,) = [
            t.message
            for t in await gw.parts.store.session_transcript(units)
            if t.message.role == "assistant"
        ]
        await gw.parts.store.set_feedback_comment(reply.id, "u1", "kilometres, please")
        await gw.synthesize()
        assert [shown_sessions(b) for b in fake_llm.requests] == [[units]]
