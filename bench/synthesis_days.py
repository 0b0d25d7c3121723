"""Benchmark (d'): synthesis cost over 14 days of rated sessions, with hourly passes.

Each simulated hour, a share of the day's finished, rated sessions arrives and one pass
runs (the default schedule), against a fake model that proposes nothing, so no evidence is
ever consumed: the worst case for accumulation. Counted per day: synthesis calls and the
prompt tokens sent. *Before* is what the earlier rule sent, computed from the same run:
every unconsumed session of the evidence window shown again at every pass, in batches of
the same bounds. Run with `python -m bench.synthesis --days 14 [--per-day 10,100,1000]`.
"""

from __future__ import annotations

import functools
import math
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.report import machine, table
from gateway.config import Settings
from gateway.core.tokens import estimate_tokens
from gateway.runtime.assembly import Parts, close_parts, open_parts
from tests.fakes.openai_server import FakeOpenAI

DAY = 86400.0
PASSES_PER_DAY = 24


@dataclass
class Days:
    """Calls and tokens per day for one rate, after and (computed) before."""

    per_day: int
    calls: list[int] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    before_calls: list[int] = field(default_factory=list)
    before_tokens: list[int] = field(default_factory=list)
    session_tokens: int = 0
    """What one session costs in a prompt, measured (question, answer, trace, rating)."""
    overhead: int = 0
    """What a call costs besides its sessions (instructions, skills, rejections), measured."""


async def simulate(per_day: int, days: int, tmp: Path, seed_value: int = 1) -> Days:
    from bench.synthesis import seed

    out = Days(per_day)
    async with FakeOpenAI() as fake:
        fake.default = lambda body: '{"proposals": []}'
        settings = Settings(
            _env_file=None,
            data_dir=tmp / f"days-{per_day}",
            llm_base_url=fake.base_url,
            llm_model="fake-model",
            synthesis_interval_minutes=0,
        )
        parts = await open_parts(settings)
        cfg = parts.synthesizer.config
        rng = random.Random(seed_value)
        await measure(parts, fake, rng, out, start=time.time() - (days + 1) * DAY)
        start = time.time() - days * DAY
        arrived: list[tuple[float, int]] = []  # (finished at, tokens of the session)
        try:
            for day in range(days):
                calls = tokens = before_calls = before_tokens = 0
                for hour in range(PASSES_PER_DAY):
                    now = start + day * DAY + hour * 3600
                    n = per_day // PASSES_PER_DAY + (hour < per_day % PASSES_PER_DAY)
                    await seed(parts.store, n, rng, at=now - 60)
                    arrived += [(now - 60, out.session_tokens)] * n
                    parts.synthesizer.clock = functools.partial(float, now)  # the pass's hour
                    asked = len(fake.requests)
                    await parts.synthesizer.run("bench")
                    sent = [
                        sum(estimate_tokens(str(m.get("content") or "")) for m in r["messages"])
                        for r in fake.requests[asked:]
                    ]
                    calls, tokens = calls + len(sent), tokens + sum(sent)
                    window = [t for at, t in arrived if at >= now - cfg.evidence_window_seconds]
                    fit = cfg.batch_tokens // out.session_tokens
                    per_batch = max(1, min(cfg.batch_sessions, fit))
                    b = math.ceil(len(window) * 0.8 / per_batch)  # 80 % have a signal
                    before_calls += b
                    before_tokens += b * out.overhead + int(sum(window) * 0.8)
                out.calls.append(calls)
                out.tokens.append(tokens)
                out.before_calls.append(before_calls)
                out.before_tokens.append(before_tokens)
        finally:
            await close_parts(parts)
    return out


async def measure(
    parts: Parts, fake: FakeOpenAI, rng: random.Random, out: Days, start: float
) -> None:
    """A session's and a call's own cost in prompt tokens, from a pass over 10 sessions."""
    from bench.synthesis import seed

    await seed(parts.store, 10, rng, at=start)
    parts.synthesizer.clock = lambda: start + 60
    summary = await parts.synthesizer.run("bench")
    (body,) = fake.requests
    sent = sum(estimate_tokens(str(m.get("content") or "")) for m in body["messages"])
    prompt = str(body["messages"][-1]["content"])
    out.session_tokens = max(1, estimate_tokens(prompt) // max(1, summary.sessions))
    out.overhead = max(0, sent - out.session_tokens * summary.sessions)
    fake.requests.clear()


def render(results: list[Days], days: int) -> str:
    rows = []
    for r in results:
        for label, day in (("day 1", 0), ("day 7", min(6, days - 1)), (f"day {days}", days - 1)):
            rows.append(
                [
                    r.per_day,
                    label,
                    r.before_calls[day],
                    r.calls[day],
                    r.before_tokens[day],
                    r.tokens[day],
                ]
            )
    return "\n".join(
        [
            f"Machine: {machine()}.",
            "",
            f"{days} simulated days, {PASSES_PER_DAY} passes a day, the default window (14 days)"
            " and batch bounds; a model that proposes nothing, so nothing is consumed. After:"
            " measured. Before: the earlier rule (every unconsumed session of the window at"
            f" every pass) computed from the same sessions, at {results[0].session_tokens}"
            f" tokens a session and {results[0].overhead} a call (measured).",
            "",
            table(
                [
                    "sessions a day (70 % rated, 10 % failed)",
                    "day",
                    "calls before",
                    "calls after",
                    "tokens before",
                    "tokens after",
                ],
                rows,
            ),
        ]
    )
