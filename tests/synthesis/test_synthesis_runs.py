"""Synthesis runs: failures recorded without staging, one pass at a time, the schedule, the CLI."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from gateway.config import Settings
from gateway.review.events import ReviewEvent
from gateway.store import SqliteStore
from tests.fakes.openai_server import FakeOpenAI
from tests.serve_process import skillgate
from tests.synthesis_support import (
    answer,
    evidence_prompt,
    follow,
    gateway,
    proposal,
    seed_offline,
    synth_settings,
)


def staged_files(settings: Settings) -> list[Path]:
    return sorted(settings.skills_dir.rglob("SKILL.md.proposed"))


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Sure! Here are my proposals: make answers shorter.", "not valid proposal JSON"),
        (json.dumps({"proposals": [{"kind": "create", "name": "x"}]}), "description"),
        (json.dumps({"proposals": [{**proposal(), "kind": "rewrite"}]}), "kind"),
        ("", "answered nothing"),
    ],
    ids=["prose", "missing-fields", "unknown-kind", "empty"],
)
async def test_an_answer_that_is_not_the_agreed_json_fails_the_run_and_stages_nothing(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, reply: str, expected: str
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    async with gateway(settings) as gw:
        sid = await gw.seed()
        fake_llm.reply(reply)
        run = await gw.synthesize()
        assert run["status"] == "failed" and expected in run["error"]
        assert run["proposed"] == []
        assert staged_files(settings) == []
        assert (await gw.call("GET", "/proposals"))[1] == []
        _, runs = await gw.call("GET", "/runs")
        assert runs[0]["status"] == "failed" and expected in runs[0]["error"]
        assert runs[0]["model"] == "fake-model" and runs[0]["finished"]

        # The sessions were not consumed: the next pass reads them again.
        fake_llm.reply(answer(proposal()))
        again = await gw.synthesize()
        assert again["status"] == "ok" and len(again["proposed"]) == 1
        assert f'session="{sid}"' in evidence_prompt(fake_llm.requests[-1])


async def test_an_unreachable_model_fails_the_run_without_a_crash(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    async with gateway(settings) as gw:
        await gw.seed()
        fake_llm.error(503)
        run = await gw.synthesize()
        assert run["status"] == "failed" and "503" in run["error"]


async def test_a_proposal_carrying_a_key_is_refused_and_never_written(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    key = "sk-proj-" + "Ab3" * 12
    async with gateway(settings) as gw:
        await gw.seed(comment=f"my key is {key}, please remember it")
        fake_llm.reply(
            answer(proposal("api-helper", content=f"# API\n\nCall the API with `{key}`."))
        )
        run = await gw.synthesize()
        assert run["proposed"] == []
        assert run["refused"] == [
            {
                "name": "api-helper",
                "reason": "refused: it contains an OpenAI-style API key",
                "matched": None,
                "matched_skill": None,
                "detail": None,
            }
        ]
        assert staged_files(settings) == []
        assert key not in json.dumps(run)


async def test_two_passes_never_overlap_across_processes_and_a_dead_holder_expires(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    async with gateway(settings) as gw:
        await gw.seed()
        # Another process holds the lock row.
        async with SqliteStore(settings.db_path) as other:
            assert await other.acquire_lock("synthesis", "other-host:42", time.time(), 600)
        status, body = await gw.call("POST", "/synthesize")
        assert status == 409 and body["status"] == "busy"
        assert fake_llm.requests == []

        # That process died long ago: its lease ran out, so the lock is free again.
        async with SqliteStore(settings.db_path) as other:
            assert await other.acquire_lock("synthesis", "other-host:42", time.time() - 2000, 600)
        fake_llm.reply(answer(proposal()))
        run = await gw.synthesize()
        assert run["status"] == "ok" and len(run["proposed"]) == 1
        async with SqliteStore(settings.db_path) as other:
            assert await other.lock_holder("synthesis", time.time()) is None  # released


async def test_a_killed_pass_blocks_nothing_and_its_run_is_marked_interrupted(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    # A `skillgate synthesize` on this machine that was killed mid-pass: its process is
    # gone, but its lock row (with most of its lease left) and its run row remain.
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead = f"{socket.gethostname()}:{gone.stdout.strip()}:0badc0de:0123456789ab"
    async with gateway(settings) as gw:
        await gw.seed()
        async with SqliteStore(settings.db_path) as other:
            assert await other.acquire_lock("synthesis", dead, time.time(), 900)
            killed = await other.start_run("manual", "fake-model", time.time())
        fake_llm.reply(answer(proposal()))
        run = await gw.synthesize()
        assert run["status"] == "ok" and len(run["proposed"]) == 1
        status, body = await gw.call("GET", f"/runs/{killed}")
        assert status == 200 and body["status"] == "failed"
        assert "interrupted" in body["error"]
        # A live holder on another machine is still respected until its lease ends.
        async with SqliteStore(settings.db_path) as other:
            assert await other.acquire_lock("synthesis", "elsewhere:1:a:b", time.time(), 900)
        status, body = await gw.call("POST", "/synthesize")
        assert status == 409 and body["status"] == "busy"


async def test_passes_in_one_process_do_not_overlap_either(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    async with gateway(settings) as gw:
        await gw.seed()
        fake_llm.default = lambda body: answer()
        fake_llm.pause()
        first = asyncio.create_task(gw.call("POST", "/synthesize"))
        try:
            await fake_llm.wait_for_requests(1)  # the first pass is waiting for the model
            status, body = await gw.call("POST", "/synthesize")
            assert status == 409 and body["status"] == "busy"
        finally:
            fake_llm.resume()
        status, body = await first
        assert status == 200 and body["status"] == "ok"


async def test_the_schedule_runs_a_pass_on_its_interval(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm, synthesis_interval_minutes=0.002)
    await seed_offline(settings)
    fake_llm.reply(answer(proposal()))
    async with gateway(settings) as gw:
        staged = asyncio.Event()

        async def on_event(event: ReviewEvent) -> None:
            if event.kind == "staged":
                staged.set()

        follow(gw.parts.review, on_event)
        await asyncio.wait_for(staged.wait(), 10)
        _, (made,) = await gw.call("GET", "/proposals")
        _, runs = await gw.call("GET", "/runs")
        assert {r["id"]: r["trigger"] for r in runs}[made["run"]] == "schedule"


async def test_an_overdue_pass_runs_soon_after_a_restart(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm, synthesis_interval_minutes=60)
    await seed_offline(settings)
    async with SqliteStore(settings.db_path) as store:  # the last pass ran 61 minutes ago
        await store.start_run("schedule", "fake-model", time.time() - 61 * 60)
    fake_llm.reply(answer(proposal()))
    async with gateway(settings) as gw:
        staged = asyncio.Event()

        async def on_event(event: ReviewEvent) -> None:
            staged.set()

        follow(gw.parts.review, on_event)
        await asyncio.wait_for(staged.wait(), 10)
        _, runs = await gw.call("GET", "/runs")
        assert [r["trigger"] for r in runs][:2] == ["schedule", "schedule"]


async def test_the_synthesize_command_reports_progress_proposals_and_failure(
    tmp_path: Path, make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm, synthesis_batch_sessions=1)
    for _ in range(2):
        await seed_offline(settings)
    fake_llm.reply(answer(proposal()))
    fake_llm.reply(answer(proposal("chat-brevity", description="Say less in chat answers.")))
    env = {
        "SKILLGATE_DATA_DIR": str(settings.data_dir),
        "SKILLGATE_SESSION_IDLE_MINUTES": "0",
        "SKILLGATE_SYNTHESIS_BATCH_SESSIONS": "1",
        "LLM_BASE_URL": fake_llm.base_url,
        "LLM_MODEL": "fake-model",
        "LLM_MAX_RETRIES": "0",
    }
    code, out, err = await skillgate("synthesize", env=env)
    assert code == 0, err
    lines = err.splitlines()
    # A line as each batch starts, and one as it ends, in that order.
    starts = [i for i, ln in enumerate(lines) if "asking fake-model about 1 session(s)" in ln]
    ends = [i for i, ln in enumerate(lines) if " session(s) -> " in ln]
    assert len(starts) == len(ends) == 2 and starts[0] < ends[0] < starts[1] < ends[1], err
    assert "batch 1: 1 session(s) -> 1 proposed" in err
    assert "batch 2: 1 session(s) -> 0 proposed, 1 suppressed" in err
    assert "proposed #1 chat-brevity (new skill, waiting for review)" in out
    # The same text as the pending proposal: a repeat of it (a shared name alone is not).
    assert "suppressed chat-brevity: repeats proposal #1 (chat-brevity), which awaits review" in out
    assert "1 proposed, 1 suppressed, 0 refused from 2 session(s) in 2 batch(es)" in out

    await seed_offline(settings)
    fake_llm.reply("no JSON today")
    code, out, err = await skillgate("synthesize", env=env)
    assert code == 1
    assert "failed: the model's answer is not valid proposal JSON" in err


async def test_with_replicas_a_tick_is_skipped_when_another_pass_just_started() -> None:
    from types import SimpleNamespace

    from gateway.runtime.scheduler import SynthesisSchedule

    ran: list[str] = []
    last = {"at": time.time() - 10 * 60}

    class Synthesizer:
        async def run(self, trigger: str) -> SimpleNamespace:
            ran.append(trigger)
            return SimpleNamespace(status="ok")

    async def last_started() -> float | None:
        return last["at"]

    schedule = SynthesisSchedule(Synthesizer(), 60, last_started=last_started)  # type: ignore[arg-type]
    await schedule._tick()  # another replica's pass began 10 minutes ago
    assert ran == []
    last["at"] = time.time() - 40 * 60
    await schedule._tick()
    assert ran == ["schedule"]
