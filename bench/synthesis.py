"""Benchmark (d): one synthesis pass over 100 and 1,000 finished sessions.

A fresh data dir is filled with finished sessions through the store (a question, an
answer with its trace; 70 % rated, some with a comment, 10 % failed answers, 20 %
neither), then one pass runs through the same entry point as `skillgate synthesize`
(`open_parts(...).synthesizer.run`) against a zero-latency fake model that proposes
one skill in its first answer and nothing after. Counted: model calls, prompt tokens
(the gateway's estimate of what was sent, and the usage the model reported), wall time
of the pass. Run:

    python -m bench.synthesis [--sizes 100,1000] [--runs 3] [--write]
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai  # noqa: F401  # loaded up front, as in a running server: its import is no part of a pass

from bench.report import machine, median, publish, run_in_scratch, spread, table
from gateway.config import Settings
from gateway.core.records import Trace
from gateway.core.tokens import estimate_tokens
from gateway.core.turn import TurnStart
from gateway.runtime.assembly import close_parts, open_parts
from gateway.store import Store
from tests.fakes.openai_server import FakeOpenAI

QUESTIONS = (
    "How do I renew my passport before a trip abroad next month?",
    "My printer says it is offline although the wifi works, what can I check?",
    "Can you explain compound interest with a small worked example?",
    "What is a simple bread recipe for someone who never baked before?",
)
ANSWER = (
    "Here is what usually helps, step by step. First, check the basics and write down what "
    "you see. Second, try the simplest fix and wait a minute. Third, if that does not work, "
    "look at the settings page and compare them with the defaults. "
) * 3
COMMENTS = ("too long", "the second step was wrong", "thanks, that worked", None)


@dataclass
class Pass:
    """One synthesis pass over `size` sessions."""

    size: int
    status: str
    sessions: int
    skipped: int
    calls: int
    sent_tokens: int
    reported_tokens: int
    max_call_tokens: int
    seconds: float


_CHATS = itertools.count()


async def seed(store: Store, size: int, rng: random.Random, at: float | None = None) -> None:
    """`size` finished sessions, each a question and an answer, most of them rated."""
    now = time.time() - 3600 if at is None else at
    for _ in range(size):
        i = next(_CHATS)
        chat = f"bench-{i}"
        question = f"{QUESTIONS[i % len(QUESTIONS)]} (case {i})"
        # As the gateway stores a turn: the question opens it, the answer comes with its trace.
        turn = await store.start_turn(
            TurnStart("telegram", chat, f"u{i}", question, None, now, 1800, history_limit=0)
        )
        roll = rng.random()
        failed = roll >= 0.9
        trace = Trace(
            skills_offered=["travel-documents"],
            model="fake-model",
            completed=not failed,
            error="model unreachable: APITimeoutError" if failed else None,
        )
        answer = await store.add_answer(
            turn.session_id,
            "⚠️ Sorry, I couldn't answer that just now." if failed else ANSWER,
            kind="error" if failed else "normal",
            inbox_id=None,
            trace=trace,
            now=now,
            user_id=f"u{i}",
        )
        if roll < 0.7:
            await store.set_feedback(answer.id, f"u{i}", rng.choice((1, -1)), now=now)
            comment = rng.choice(COMMENTS)
            if comment:
                await store.set_feedback_comment(answer.id, f"u{i}", comment, now=now)
        await store.finish_chat_session("telegram", chat, "new", now=now)


def proposals(body: dict[str, Any], first: list[bool]) -> str:
    """The fake model's JSON: one new skill the first time, then nothing to add."""
    if not first[0]:
        return json.dumps({"proposals": []})
    first[0] = False
    skill: dict[str, Any] = {
        "kind": "create",
        "target": None,
        "name": "printer-offline",
        "description": "Use when a printer shows as offline although the network works.",
        "content": "# Printer offline\n\n1. Check the cable or wifi.\n2. Restart the spooler.\n",
        "based_on": [],
        "rationale": "Several rated answers about offline printers missed the spooler.",
    }
    return json.dumps({"proposals": [skill]})


async def one_pass(size: int, tmp: Path, seed_value: int) -> Pass:
    data = tmp / f"data-{size}-{seed_value}"
    async with FakeOpenAI() as fake:
        first = [True]
        fake.default = lambda body: proposals(body, first)
        settings = Settings(
            _env_file=None,
            data_dir=data,
            llm_base_url=fake.base_url,
            llm_model="fake-model",
            synthesis_interval_minutes=0,
        )
        parts = await open_parts(settings)
        try:
            await seed(parts.store, size, random.Random(seed_value))
            started = time.perf_counter()
            summary = await parts.synthesizer.run("bench")
            seconds = time.perf_counter() - started
        finally:
            await close_parts(parts)
        sent = [
            sum(estimate_tokens(str(m.get("content") or "")) for m in r["messages"])
            for r in fake.requests
        ]
    return Pass(
        size=size,
        status=summary.status if summary.error is None else f"{summary.status}: {summary.error}",
        sessions=summary.sessions,
        skipped=summary.skipped,
        calls=len(sent),
        sent_tokens=sum(sent),
        reported_tokens=summary.prompt_tokens,
        max_call_tokens=max(sent, default=0),
        seconds=seconds,
    )


def render(passes: dict[int, list[Pass]], args: argparse.Namespace) -> str:
    rows = []
    for size, ps in passes.items():
        calls = [float(p.calls) for p in ps]
        tokens = [float(p.sent_tokens) for p in ps]
        rows.append(
            [
                size,
                ", ".join(sorted({p.status for p in ps})),
                spread([float(p.sessions) for p in ps], "{:.0f}")
                + " / "
                + spread([float(p.skipped) for p in ps], "{:.0f}"),
                spread(calls, "{:.0f}"),
                spread(tokens, "{:.0f}"),
                spread([float(p.reported_tokens) for p in ps], "{:.0f}"),
                spread([float(p.max_call_tokens) for p in ps], "{:.0f}"),
                spread([p.seconds for p in ps], "{:.2f}"),
                f"{median(tokens) / size:.0f}",
                f"{median([p.seconds for p in ps]) / size * 1000:.1f}",
            ]
        )
    sizes = sorted(passes)
    scaling = ""
    if len(sizes) >= 2:
        small, big = sizes[0], sizes[-1]

        def ratio(attr: str) -> float:
            values = {s: median([float(getattr(p, attr)) for p in passes[s]]) for s in (small, big)}
            return values[big] / values[small] if values[small] else float("nan")

        scaling = (
            f"From {small} to {big} sessions ({big / small:.0f}x): model calls "
            f"{ratio('calls'):.1f}x, prompt tokens {ratio('sent_tokens'):.1f}x, wall time "
            f"{ratio('seconds'):.1f}x."
        )
    return "\n".join(
        [
            f"Machine: {machine()}.",
            "",
            f"{args.runs} passes per size, each on a fresh data dir; medians with the range in "
            "brackets. Sessions shown / skipped (no rating and no failure: consumed unread). "
            "Sent tokens are the gateway's estimate of the prompts sent; reported tokens are "
            "the fake model's usage (characters / 4).",
            "",
            table(
                [
                    "sessions",
                    "status",
                    "shown / skipped",
                    "model calls",
                    "prompt tokens sent",
                    "reported",
                    "largest call",
                    "wall s",
                    "tokens/session",
                    "ms/session",
                ],
                rows,
            ),
            "",
            scaling,
        ]
    )


async def run(args: argparse.Namespace, tmp: Path) -> dict[int, list[Pass]]:
    sizes = [int(s) for s in args.sizes.split(",")]
    results: dict[int, list[Pass]] = {s: [] for s in sizes}
    for i in range(args.runs):
        for size in sizes:
            p = await one_pass(size, tmp, seed_value=i + 1)
            results[size].append(p)
            print(
                f"run {i + 1} {size:>5} sessions: {p.status}, {p.calls} calls, "
                f"{p.sent_tokens} tokens, {p.seconds:.2f} s",
                flush=True,
            )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="100,1000", help="finished sessions per pass")
    parser.add_argument("--runs", type=int, default=3, help="passes per size")
    parser.add_argument("--write", action="store_true", help="update docs/BENCHMARKS.md")
    parser.add_argument("--days", type=int, default=0, help="instead: simulate this many days")
    parser.add_argument("--per-day", default="10,100,1000", help="rated sessions a day (--days)")
    parser.add_argument(
        "--held-days", type=int, default=0, help="instead: days with a judge that never answers"
    )
    args = parser.parse_args()
    started = time.monotonic()
    if args.held_days:
        from bench.synthesis_held import render as render_held
        from bench.synthesis_held import simulate as simulate_held

        async def held(tmp: Path) -> list[Any]:
            return [await simulate_held(args.held_days, tmp, j) for j in ("down", "garbled")]

        results_held = run_in_scratch(held)
        text = render_held(results_held, args.held_days)
        publish("synthesis-held", text, started, write=args.write)
        return
    if args.days:
        from bench.synthesis_days import render as render_days
        from bench.synthesis_days import simulate

        async def days(tmp: Path) -> list[Any]:
            rates = [int(n) for n in args.per_day.split(",")]
            return [await simulate(n, args.days, tmp) for n in rates]

        results_days = run_in_scratch(days)
        publish("synthesis-days", render_days(results_days, args.days), started, write=args.write)
        return
    results = run_in_scratch(lambda tmp: run(args, tmp))
    publish("synthesis", render(results, args), started, write=args.write)


if __name__ == "__main__":
    main()
