"""Benchmark: scheduled tasks priced against a chat answer, on SQLite and on two replicas.

`--tasks` reminders (10,000 by default), each for its own Telegram chat, are stored through
the store's own `task_add`, then made due in the same second (`--due-in` seconds after the
gateway is healthy). `skillgate serve` (the real process, its task worker as configured)
delivers them to the fake Bot API. Measured: the seconds from the due time to the last
delivery (the target: within 60 s), the gateway's CPU per delivery (and the PostgreSQL
server's, on replicas), and, on the same process right after, the CPU per chat answer of
`--answers` webhooks posted flat out: a delivery should cost no more than an answer.
With `replicas`, two `skillgate serve` share one PostgreSQL database and every reminder
must arrive exactly once (each carries a key; the fake records every sendMessage), and
the task runs say how the two shared them. Run:

    python -m bench.schedule [--only sqlite,replicas] [--tasks 10000] [--answers 2000]
        [--postgres URL] [--write]

Nothing else should run on the machine; the "other load" line says how much did.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sqlite3
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from bench import pg
from bench.loadgen import Answers, Poster, make_batch
from bench.procs import Child, free_port, machine_busy_seconds, skillgate_serve, wait_healthy
from bench.report import machine, publish, run_in_scratch, table, verdict
from gateway.core.scheduled import NewTask
from gateway.store.base import Store

ROOT = Path(__file__).resolve().parent.parent
SECRET = "bench-schedule-secret"
WITHIN_S = 60.0
"""Every occurrence due in the same minute delivered within this many seconds of it."""
FAR = 4_000_000_000.0
"""Where the tasks wait while the gateway starts (2096): not due."""
PHASE = 7
"""The webhook phase of the chat answers: their chats start at 7,000,001."""
FIRST_CHAT = 5_000_000
"""The reminders' chats: FIRST_CHAT + n."""


@dataclass
class Result:
    """One backend's run."""

    name: str
    tasks: int
    delivered: int
    duplicates: int
    last_s: float
    """From the due time to the last delivery."""
    delivery_ms: float
    """The gateway processes' CPU per delivery (all replicas)."""
    delivery_server_ms: float
    answers: int
    answer_ms: float
    answer_server_ms: float
    shares: dict[str, int]
    other_load: float
    """Cores used by everything else on the machine while the tasks were delivered."""


class Rig:
    """The fake Bot API and model, and the gateways of one backend."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.fakes = [
            Child.python(n, "bench.fakes", n, log_dir=tmp, cwd=ROOT) for n in ("telegram", "openai")
        ]
        api, llm = (c.ready_line() for c in self.fakes)
        self.api, self.token, self.llm = api["base_url"], api["token"], llm["base_url"]
        self.answers = Answers(api["control"])
        self.control = api["control"]
        self.gateways: list[Child] = []
        self.urls: list[str] = []

    async def serve(self, name: str, count: int, database: str | None) -> None:
        for n in range(count):
            port = free_port()
            settings = {
                "SKILLGATE_DATA_DIR": str(self.tmp / f"{name}-data"),
                "TELEGRAM_BOT_TOKEN": self.token,
                "TELEGRAM_WEBHOOK_SECRET": SECRET,
                "TELEGRAM_API_BASE_URL": self.api,
                "TELEGRAM_MAX_MESSAGES_PER_SECOND": "0",
                "LLM_BASE_URL": self.llm,
                "LLM_MODEL": "fake-model",
            }
            if database is not None:
                settings["SKILLGATE_DATABASE_URL"] = database
            child = skillgate_serve(f"{name}-{n}", port, settings, self.tmp)
            self.gateways.append(child)
            await wait_healthy(f"http://127.0.0.1:{port}/healthz", child)
            self.urls.append(f"http://127.0.0.1:{port}/webhook/telegram")

    def cpu(self) -> float:
        return sum(g.cpu() for g in self.gateways)

    def stop_gateways(self) -> None:
        for child in reversed(self.gateways):
            child.stop()
        self.gateways, self.urls = [], []

    def stop(self) -> None:
        self.stop_gateways()
        for child in self.fakes:
            child.stop()


async def add_tasks(store: Store, count: int) -> None:
    """`count` one-off reminders, one chat each, not yet due; each text carries its key."""
    for n in range(count):
        task = NewTask(
            channel="telegram",
            chat_id=str(FIRST_CHAT + n),
            user_id=str(FIRST_CHAT + n),
            kind="reminder",
            text=f"r-{n} water the plants",
            timezone="UTC",
            next_at=FAR,
        )
        await store.task_add(task)


async def run_sql(database: str | Path, sql: str, *args: object) -> list[tuple[object, ...]]:
    """One statement on the gateway's database (beside the running gateways): its rows."""
    if isinstance(database, Path):
        with contextlib.closing(sqlite3.connect(database, timeout=30)) as conn, conn:
            return list(conn.execute(sql, args).fetchall())
    import asyncpg

    conn = await asyncpg.connect(database)
    try:
        numbered = sql.replace("?", "$1")  # at most one parameter here
        return [tuple(r) for r in await conn.fetch(numbered, *args)]
    finally:
        await conn.close()


async def make_due(database: str | Path, at: float) -> None:
    """Every task due within the second starting at `at`."""
    await run_sql(database, "update scheduled_tasks set next_at = ? + (id % 10) / 10.0", at)


async def shares(database: str | Path) -> dict[str, int]:
    """Task runs per replica (its holder)."""
    rows = await run_sql(database, "select holder, count(*) from task_runs group by holder")
    return {str(holder): int(str(n)) for holder, n in rows}


async def delivered(
    session: aiohttp.ClientSession, control: str, tasks: int
) -> tuple[Counter[str], float]:
    """The reminders the fake Bot API received (by key), and when the last one came."""
    async with session.post(f"{control}/drain") as resp:
        data = await resp.json()
    keys: Counter[str] = Counter()
    last = 0.0
    for _key, chat, at in data["arrivals"]:
        if FIRST_CHAT <= chat < FIRST_CHAT + tasks:
            keys[str(chat)] += 1
            last = max(last, at)
    return keys, last


async def one_backend(args: argparse.Namespace, name: str, tmp: Path) -> Result:
    rig = Rig(tmp)
    server = pg.Server(args.postgres) if name == "replicas" else None
    try:
        url = await server.database("bench_schedule") if server else None
        database: str | Path = url or tmp / f"{name}-data" / "skillgate.db"
        store: Store
        if url is None:
            from gateway.store.sqlite import SqliteStore

            (tmp / f"{name}-data").mkdir(parents=True, exist_ok=True)
            store = SqliteStore(database)
        else:
            from gateway.store.postgres import PostgresStore

            store = PostgresStore(url)
        await store.open()
        try:
            await add_tasks(store, args.tasks)
        finally:
            await store.close()
        await rig.serve(name, 2 if server else 1, url)
        async with aiohttp.ClientSession() as session:
            await session.post(f"{rig.control}/drain")  # start-up's calls
            due = time.time() + args.due_in
            await make_due(database, due)
            await asyncio.sleep(max(0.0, due - time.time() - 0.2))
            cpu0, server0, busy0, wall0 = (
                rig.cpu(),
                server.cpu() if server else 0.0,
                machine_busy_seconds(),
                time.monotonic(),
            )
            due_mono = time.monotonic() + (due - time.time())
            await rig.answers.wait(session, args.tasks, stall=WITHIN_S)
            cpu1, server1, busy1, wall1 = (
                rig.cpu(),
                server.cpu() if server else 0.0,
                machine_busy_seconds(),
                time.monotonic(),
            )
            keys, last = await delivered(session, rig.control, args.tasks)
            # The same processes answer chats, flat out, right after.
            batch = make_batch(PHASE, args.answers, min(args.answers, 1000), 10_000_000)
            cpu2, server2 = rig.cpu(), server.cpu() if server else 0.0
            async with Poster(rig.urls, SECRET, 40) as poster:
                await poster.flat_out(batch)
            answered = await rig.answers.wait(session, args.answers, stall=10.0)
            cpu3, server3 = rig.cpu(), server.cpu() if server else 0.0
        split = await shares(database) if server else {}
        gateway_cpu = cpu1 - cpu0
        n = max(1, len(keys))
        return Result(
            name=name,
            tasks=args.tasks,
            delivered=len(keys),
            duplicates=sum(c - 1 for c in keys.values()),
            last_s=last - due_mono if keys else float("nan"),
            delivery_ms=1000 * gateway_cpu / n,
            delivery_server_ms=1000 * (server1 - server0) / n,
            answers=answered,
            answer_ms=1000 * (cpu3 - cpu2) / max(1, answered),
            answer_server_ms=1000 * (server3 - server2) / max(1, answered),
            shares=split,
            other_load=max(0.0, (busy1 - busy0) - gateway_cpu - (server1 - server0))
            / max(1e-9, wall1 - wall0),
        )
    finally:
        rig.stop()
        if server is not None:
            server.stop()


def render(results: list[Result], args: argparse.Namespace) -> str:
    rows, verdicts = [], []
    for r in results:
        together = r.delivery_ms + r.delivery_server_ms
        answer = r.answer_ms + r.answer_server_ms
        rows.append(
            [
                "SQLite, one process" if r.name == "sqlite" else "2 replicas, one PostgreSQL",
                f"{r.delivered}/{r.tasks}",
                str(r.duplicates),
                f"{r.last_s:.1f}",
                f"{r.delivery_ms:.2f}",
                "-" if r.name == "sqlite" else f"{r.delivery_server_ms:.2f}",
                f"{answer:.2f}",
                f"{together / answer:.2f}" if answer else "n/a",
                f"{r.other_load:.2f}",
            ]
        )
        once = r.delivered == r.tasks and r.duplicates == 0
        verdicts.append(
            [
                rows[-1][0],
                f"{r.last_s:.1f} s: {verdict(r.last_s, WITHIN_S, at_most=True)}",
                f"{together / answer:.2f}x: {verdict(together / answer, 1.0, at_most=True)}"
                if answer
                else "n/a",
                "met"
                if once
                else f"MISSED ({r.tasks - r.delivered} missing, {r.duplicates} twice)",
                ", ".join(f"{n}" for n in sorted(r.shares.values(), reverse=True)) or "-",
            ]
        )
    return "\n".join(
        [
            f"Machine: {machine()}.",
            "",
            f"{args.tasks} reminders, each for its own chat, due in the same second; then "
            f"{args.answers} chat answers posted flat out to the same processes. CPU in ms of "
            "the gateway processes (all replicas) and of the PostgreSQL server per delivery "
            "and per answer; other load in cores while the reminders went out.",
            "",
            table(
                [
                    "backend",
                    "delivered",
                    "twice",
                    "last, s after due",
                    "CPU ms/delivery",
                    "server CPU ms/delivery",
                    "CPU ms/answer (with server)",
                    "delivery/answer",
                    "other load",
                ],
                rows,
            ),
            "",
            table(
                [
                    "backend",
                    "within 60 s",
                    "CPU per delivery <= an answer's",
                    "each exactly once",
                    "runs per replica",
                ],
                verdicts,
            ),
        ]
    )


async def run(args: argparse.Namespace, tmp: Path) -> list[Result]:
    results = []
    for name in args.only.split(","):
        r = await one_backend(args, name, tmp)
        print(
            f"{name}: {r.delivered}/{r.tasks} delivered ({r.duplicates} twice), last "
            f"{r.last_s:.1f} s after due, {r.delivery_ms:.2f} + {r.delivery_server_ms:.2f} ms "
            f"CPU/delivery, {r.answer_ms:.2f} + {r.answer_server_ms:.2f} ms/answer "
            f"({r.answers} answers), other load {r.other_load:.2f}",
            flush=True,
        )
        results.append(r)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", default="sqlite,replicas", help="sqlite, replicas or both")
    parser.add_argument("--tasks", type=int, default=10_000, help="reminders due at once")
    parser.add_argument("--answers", type=int, default=2000, help="chat answers to price them")
    parser.add_argument("--due-in", type=float, default=3.0, help="seconds after healthy")
    parser.add_argument("--postgres", help="an existing server's URL (default: start one)")
    parser.add_argument("--write", action="store_true", help="update docs/BENCHMARKS.md")
    args = parser.parse_args()
    started = time.monotonic()
    results = run_in_scratch(lambda tmp: run(args, tmp))
    publish("schedule", render(results, args), started, write=args.write)


if __name__ == "__main__":
    main()
