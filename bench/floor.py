"""The cost of each step of an answer on its own: what the libraries charge per call.

Run one call after another in this process against the benchmark's fakes and take the
CPU time per call, so the gap between the bare limit and a bot built on the official
clients can be read step by step. On its own, a quick look at one step:

    python -m bench.floor model [--rounds 5] [--calls 300]   # the model call, bare and ours
    python -m bench.floor store [--rounds 5] [--postgres URL] # the store's calls of an answer,
                                                              # SQLite and PostgreSQL alternately,
                                                              # and PostgreSQL's round trips
    python -m bench.floor telegram [--rounds 5]  # sendMessage and reading the update
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp

from bench.pg import Server
from bench.procs import Child
from bench.report import median, spread
from gateway.core.llm import OpenAIChat
from gateway.core.prompt import DEFAULT_PERSONA
from gateway.core.records import Trace
from gateway.core.turn import TurnStart
from gateway.store import SqliteStore
from gateway.store.postgres import PostgresStore
from tests.fakes.telegram_api import make_text_update

Step = Callable[[int], Awaitable[Any]]
MESSAGES = [
    {"role": "system", "content": DEFAULT_PERSONA},
    {"role": "user", "content": "q0-1 how do I renew my passport?"},
]


async def cpu_per_call(step: Step, calls: int) -> float:
    """CPU milliseconds per call of `step`, after a few warm-up calls."""
    for i in range(5):
        await step(-i - 1)
    started = time.process_time()
    for i in range(calls):
        await step(i)
    return (time.process_time() - started) / calls * 1000


async def cpu_interleaved(steps: dict[str, Step], calls: int, block: int = 25) -> dict[str, float]:
    """CPU milliseconds per call of each step, the steps taking turns `block` calls at a
    time, so that a machine whose other load comes and goes weighs on each alike."""
    for step in steps.values():
        for i in range(5):
            await step(-i - 1)
    spent = dict.fromkeys(steps, 0.0)
    for start in range(0, calls, block):
        for name, step in steps.items():
            started = time.process_time()
            for i in range(start, min(start + block, calls)):
                await step(i)
            spent[name] += time.process_time() - started
    return {name: total / calls * 1000 for name, total in spent.items()}


async def measure(llm_url: str, api_url: str, token: str, calls: int = 300) -> list[list[str]]:
    """One row per step: what it is, how the bare handler does it, how the gateway does."""
    messages = MESSAGES
    rows: list[list[str]] = []
    async with aiohttp.ClientSession() as session, telegram_steps(api_url, token) as telegram:
        llm = OpenAIChat(llm_url, "fake-model")

        async def bare_model(_i: int) -> None:
            body = {"model": "fake-model", "messages": messages}
            async with session.post(f"{llm_url}/chat/completions", json=body) as resp:
                await resp.json()

        async def gateway_model(_i: int) -> None:
            await llm.complete(messages)

        try:
            for label, bare, ours in [("model call", bare_model, gateway_model), *telegram]:
                rows.append(
                    [
                        label,
                        f"{await cpu_per_call(bare, calls):.3f}",
                        f"{await cpu_per_call(ours, calls):.3f}",
                    ]
                )
        finally:
            await llm.close()
    rows.append(
        ["store: inbox, turn, answer, done with ids", "-", f"{await store_turn(calls):.3f}"]
    )
    return rows


@contextlib.asynccontextmanager
async def telegram_steps(api_url: str, token: str) -> AsyncIterator[list[tuple[str, Step, Step]]]:
    """(step, bare, ours) for sendMessage and for reading the update, against this Bot API."""
    from telegram.ext import ExtBot

    from gateway.channels.telegram.format import Part
    from gateway.channels.telegram.incoming import read_message
    from gateway.channels.telegram.send import Sender, SendPolicy, Target, bot_request

    update = make_text_update(1, "q0-1 how do I renew my passport?", chat_id=42, user_id=42)
    raw = json.dumps(update)
    async with aiohttp.ClientSession() as session:
        bot = ExtBot(token, base_url=api_url, request=bot_request())
        await bot.initialize()
        # Unpaced, as the benchmark's gateway runs (TELEGRAM_MAX_MESSAGES_PER_SECOND=0).
        sender = Sender(bot, SendPolicy(private_interval=0, overall_per_second=0))

        async def bare_send(i: int) -> None:
            form = {"chat_id": "42", "text": f"answer {i}"}
            async with session.post(f"{api_url}{token}/sendMessage", data=form) as resp:
                await resp.read()

        async def gateway_send(i: int) -> None:
            await sender.send(Target(42), Part.of_text(f"answer {i}"))

        async def bare_parse(_i: int) -> None:
            json.loads(raw)

        async def gateway_parse(_i: int) -> None:
            read_message(json.loads(raw)["message"])

        try:
            yield [
                ("sendMessage", bare_send, gateway_send),
                ("parse the update", bare_parse, gateway_parse),
            ]
        finally:
            await bot.shutdown()


async def telegram_rounds(rounds: int, calls: int) -> dict[str, list[float]]:
    """CPU ms per call of each Telegram step, bare and ours alternately, against the fake."""
    out: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        fake = Child.python("fake-bot-api", "bench.fakes", "telegram", log_dir=Path(tmp))
        ready = fake.ready_line()
        try:
            async with telegram_steps(ready["base_url"], ready["token"]) as steps:
                for _ in range(rounds):
                    for label, bare, ours in steps:
                        out.setdefault(f"{label}, bare", []).append(await cpu_per_call(bare, calls))
                        out.setdefault(f"{label}, ours", []).append(await cpu_per_call(ours, calls))
        finally:
            fake.stop()
    return out


@contextlib.contextmanager
def statements_sent() -> Iterator[list[int]]:
    """Count the statements asyncpg sends while the block runs, each a round trip to the
    server (`BEGIN` and `COMMIT` included); the count is the list's one item."""
    from asyncpg.connection import Connection

    count = [0]
    names = ("fetch", "fetchrow", "fetchval", "execute", "executemany")
    originals = {name: getattr(Connection, name) for name in names}

    def counting(original: Callable[..., Any]) -> Callable[..., Any]:
        def counted(self: Connection, *args: Any, **kwargs: Any) -> Any:
            count[0] += 1
            return original(self, *args, **kwargs)

        return counted

    for name, original in originals.items():
        setattr(Connection, name, counting(original))
    try:
        yield count
    finally:
        for name, original in originals.items():
            setattr(Connection, name, original)


async def store_turn(calls: int, postgres: str | None = None) -> float:
    """CPU ms of the store calls one answered update makes, on SQLite or this database
    (the chat's state with the turn's start, the answer, then the update's done with where
    the answer went: `docs/DESIGN.md`, round trips)."""
    return (await store_turn_counted(calls, postgres))[0]


async def store_turn_counted(calls: int, postgres: str | None = None) -> tuple[float, float]:
    """`store_turn`, and on PostgreSQL the statements sent per answer (each a round trip)."""
    with tempfile.TemporaryDirectory() as tmp:
        made = SqliteStore(Path(tmp) / "db.sqlite") if postgres is None else PostgresStore(postgres)
        async with made as store:

            async def turn(i: int) -> None:
                item = await store.inbox_add("telegram", str(i), f"c{i % 100}", "{}")
                assert item is not None
                now = time.time()
                start = TurnStart("telegram", f"c{i % 100}", "u", "hello", item.id, now, 1800, 60)
                state = await store.chat_state("telegram", f"c{i % 100}", "u", now, start)
                assert state.turn is not None
                answer = await store.add_answer(
                    state.turn.session_id,
                    "hi",
                    kind="normal",
                    inbox_id=item.id,
                    trace=Trace(),
                    now=now,
                    user_id="u",
                )
                await store.inbox_done(item.id, answer_ids=(answer.id, ["1"]))

            with statements_sent() as sent:
                cpu = await cpu_per_call(turn, calls)
            return cpu, sent[0] / (calls + 5)  # the warm-up calls were counted too


async def store_rounds(rounds: int, calls: int, postgres: str | None) -> dict[str, list[float]]:
    """CPU ms per answer of the store's calls, SQLite and PostgreSQL alternately, each round
    on a fresh database (PostgreSQL: a server of this run's own unless `postgres` names one);
    and under "round trips" the statements PostgreSQL was sent per answer."""
    server = Server(postgres)
    out: dict[str, list[float]] = {"sqlite": [], "postgres": [], "round trips": []}
    try:
        for r in range(rounds):
            out["sqlite"].append(await store_turn(calls))
            cpu, trips = await store_turn_counted(calls, await server.database(f"floor{r}"))
            out["postgres"].append(cpu)
            out["round trips"].append(trips)
    finally:
        server.stop()
    return out


async def model_rounds(rounds: int, calls: int) -> dict[str, list[float]]:
    """CPU ms per model call, bare and ours, taking turns, against the fake model's process."""
    with tempfile.TemporaryDirectory() as tmp:
        fake = Child.python("fake-model", "bench.fakes", "openai", log_dir=Path(tmp))
        url = fake.ready_line()["base_url"]
        llm = OpenAIChat(url, "fake-model")
        whole = OpenAIChat(url, "fake-model")
        whole.streaming = False
        body = {"model": "fake-model", "messages": MESSAGES}
        out: dict[str, list[float]] = {"bare": [], "streamed": [], "whole": []}
        try:
            async with aiohttp.ClientSession() as session:

                async def bare(_i: int) -> None:
                    async with session.post(f"{url}/chat/completions", json=body) as resp:
                        await resp.json()

                async def streamed(_i: int) -> None:
                    await llm.complete(MESSAGES)

                async def unstreamed(_i: int) -> None:
                    await whole.complete(MESSAGES)

                steps: dict[str, Step] = {"bare": bare, "streamed": streamed, "whole": unstreamed}
                for _ in range(rounds):
                    for name, cost in (await cpu_interleaved(steps, calls)).items():
                        out[name].append(cost)
        finally:
            await llm.close()
            await whole.close()
            fake.stop()
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("step", choices=("model", "store", "telegram"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument(
        "--postgres", help="a PostgreSQL server's URL for `store` (default: start one)"
    )
    args = parser.parse_args()
    if args.step == "store":
        stored = asyncio.run(store_rounds(args.rounds, args.calls, args.postgres))
        trips = stored.pop("round trips")
        for name, values in stored.items():
            print(f"store, {name:>8}: {spread(values, '{:.3f}')} CPU ms per answer")
        print(f"PostgreSQL round trips per answer (statements sent): {spread(trips, '{:.2f}')}")
        pairs = zip(stored["postgres"], stored["sqlite"], strict=True)
        ratios = [p / s for p, s in pairs]
        print(f"postgres / sqlite, per round: {spread(ratios, '{:.2f}')}")
        return
    if args.step == "telegram":
        steps = asyncio.run(telegram_rounds(args.rounds, args.calls))
        for name, values in steps.items():
            print(f"{name:>24}: {spread(values, '{:.3f}')} CPU ms per call")
        return
    out = asyncio.run(model_rounds(args.rounds, args.calls))
    ratios = [s / b for s, b in zip(out["streamed"], out["bare"], strict=True)]
    for name, values in out.items():
        print(f"model call, {name:>8}: {spread(values, '{:.3f}')} CPU ms")
    print(f"streamed / bare, per round: {median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})")


if __name__ == "__main__":  # a quick look without the whole benchmark
    main()
