"""Benchmark (d''): same-claim questions a day when the judge never answers usably.

Each simulated hour a rated session arrives and one pass runs (the default schedule); on
the first pass of each day the model proposes one new skill, which the same-claim question
must settle (the bundled skills are live, so there is always a known claim to compare it
with). The judge passed its calibration and then gives no usable answer (HTTP 503) to
every question, so every candidate is held. Counted per day: same-claim questions asked.
*Before* is what the earlier rule asked, computed from the same run: every held candidate
again at every pass, until `HELD_LIMIT` wait. Also shown: a judge whose answers are never
the contract, found unable to judge by its calibration, whose candidates go to a person at
once. Run with `python -m bench.synthesis --held-days 14`.
"""

from __future__ import annotations

import functools
import json
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.report import machine, table
from gateway.config import Settings
from gateway.runtime.assembly import close_parts, open_parts
from gateway.synthesis.held import HELD_LIMIT, HELD_TRIES
from tests.fakes.openai_server import (
    FakeOpenAI,
    Responder,
    Scripted,
    calibrated,
    calibration_asked,
)

DAY = 86400.0
PASSES_PER_DAY = 24


@dataclass
class HeldDays:
    """Same-claim questions per day, after and (computed) before; what reached a person."""

    judge: str
    questions: list[int] = field(default_factory=list)
    before: list[int] = field(default_factory=list)
    to_person: int = 0
    calibration: int = 0
    """Questions of the judge's calibration (asked once)."""


def _draft(day: int) -> str:
    return json.dumps(
        {
            "proposals": [
                {
                    "kind": "create",
                    "target": None,
                    "name": f"day-{day}-habit",
                    "description": f"Use when a user asks about habit number {day}.",
                    "content": f"# Habit {day}\n\nMention habit number {day} in the answer.",
                    "based_on": [],
                    "rationale": "Users asked for it.",
                }
            ]
        }
    )


async def simulate(days: int, tmp: Path, judge: str = "down", seed_value: int = 1) -> HeldDays:
    """`judge`: `down` (calibrated, then 503 to every question) or `garbled` (never the JSON)."""
    from bench.synthesis import seed

    out = HeldDays(judge)
    responder: Responder = (
        calibrated(lambda body: Scripted(status=503))
        if judge == "down"
        else (lambda body: "they might be the same")
    )
    async with FakeOpenAI() as fake:
        fake.judge = responder
        proposing = {"day": -1}

        def answer(body: dict[str, Any]) -> str:
            if proposing["day"] >= 0:
                day, proposing["day"] = proposing["day"], -1
                return _draft(day)
            return '{"proposals": []}'

        fake.default = answer
        settings = Settings(
            _env_file=None,
            data_dir=tmp / f"held-{judge}",
            llm_base_url=fake.base_url,
            llm_model="fake-model",
            synthesis_interval_minutes=0,
            llm_max_retries=0,
        )
        parts = await open_parts(settings)
        rng = random.Random(seed_value)
        start = time.time() - days * DAY
        waiting = 0  # held candidates under the earlier rule
        try:
            for day in range(days):
                asked_today = before = 0
                for hour in range(PASSES_PER_DAY):
                    now = start + day * DAY + hour * 3600
                    await seed(parts.store, 1, rng, at=now - 60)
                    if hour == 0:
                        proposing["day"] = day
                    parts.synthesizer.clock = functools.partial(float, now)
                    asked = len(fake.same_claim_requests)
                    summary = await parts.synthesizer.run("bench")
                    new = fake.same_claim_requests[asked:]
                    tried = sum(1 for b in new if calibration_asked(b))
                    out.calibration += tried
                    asked_today += len(new) - tried
                    out.to_person += sum(1 for c in summary.checks if c.decision == "undecided")
                    before += waiting + (hour == 0)
                    waiting = min(HELD_LIMIT, waiting + (hour == 0))
                out.questions.append(asked_today)
                out.before.append(before if judge == "down" else 0)
        finally:
            await close_parts(parts)
    return out


def render(results: list[HeldDays], days: int) -> str:
    rows = []
    for r in results:
        for label, day in (("day 1", 0), ("day 7", min(6, days - 1)), (f"day {days}", days - 1)):
            rows.append([r.judge, label, r.before[day], r.questions[day]])
    lines = [
        f"Machine: {machine()}.",
        "",
        f"{days} simulated days, {PASSES_PER_DAY} passes a day, a rated session an hour and"
        " one new candidate a day. `down`: a judge that passed its calibration, then answers"
        " HTTP 503 to every question: each candidate is asked at most"
        f" {HELD_TRIES} times (the next pass, 4 hours later, a day later), then goes to a"
        " person. `garbled`: a judge whose answers are never the contract, unable to judge"
        " by its calibration: no question is put to it and every candidate goes to a person"
        " at once. Before: the earlier rule, every held candidate asked at every pass"
        f" (at most {HELD_LIMIT} held).",
        "",
        table(["judge", "day", "questions before", "questions after"], rows),
        "",
        "; ".join(
            f"{r.judge}: {r.to_person} candidate(s) went to a person, calibration"
            f" {r.calibration} questions once"
            for r in results
        )
        + ".",
    ]
    return "\n".join(lines)
