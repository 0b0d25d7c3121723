"""Benchmark (a): webhook to answer, Skillgate against the bare limit and two plain bots.

Four contenders (the bare limit, plain python-telegram-bot, aiogram 3, Skillgate) run as
separate processes and get the same stream of Telegram webhook
POSTs; a fake model (zero latency unless --model-latency) and a fake Bot API run as two
more processes, all on loopback. Latency is from the POST being sent to the answer's
sendMessage arriving at the fake Bot API (matched by a key in the text the model echoes).
Every round runs each contender in turn (bare, ptb, aiogram, skillgate, bare, ...), first at a
fixed rate, then flat out; the tables give per-round medians with their range and the ratios.
`postgres` and `replicas` are Skillgate on PostgreSQL, one process and two sharing one
database (webhooks alternate between them), on a server of their own (`bench.pg`). Run:

    python -m bench.webhook [--rounds 3] [--rate 150] [--write]
    python -m bench.webhook --only skillgate,postgres,replicas   # PostgreSQL beside SQLite
"""

from __future__ import annotations

import argparse
import resource
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import aiohttp

from bench import floor, pg
from bench.loadgen import Answers, Batch, Poster, make_batch
from bench.procs import Child, free_port, machine_busy_seconds, skillgate_serve, wait_healthy
from bench.report import percentile, publish, run_in_scratch
from bench.webhook_report import Phase, Results, render

ROOT = Path(__file__).resolve().parent.parent
SECRET = "bench-webhook-secret"
CONTENDERS = ("bare", "ptb", "aiogram", "skillgate", "quotas", *pg.CONTENDERS)
DEFAULT_CONTENDERS = "bare,ptb,aiogram,skillgate"
QUOTAS = {
    # Every limit on and never reached: each answer is admitted and spent in the database.
    "SKILLGATE_USER_DAILY_ANSWERS": "1000000",
    "SKILLGATE_CHAT_DAILY_ANSWERS": "1000000",
    "SKILLGATE_DAILY_TOKEN_BUDGET": "1000000000",
}
"""`--only ...,quotas`: the cost of daily limits, side by side with the gateway without them."""


class Rig:
    """The fakes and the contenders, as child processes."""

    def __init__(
        self,
        tmp: Path,
        lean: bool,
        delay: float = 0.0,
        postgres: pg.Server | None = None,
        *,
        model: Sequence[str] = (),
        settings: dict[str, str] | None = None,
    ) -> None:
        """`model`: another fake model (module and arguments, printing the same ready line);
        `settings`: added to every Skillgate contender's."""
        self.tmp = tmp
        self.children: dict[str, Child] = {}
        self.urls: dict[str, list[str]] = {}
        self.postgres = postgres
        self.settings = settings or {}
        api_args = ["telegram", "--lean"] if lean else ["telegram"]
        self.api = self._spawn("fake-bot-api", "bench.fakes", *api_args)
        echo = ("bench.fakes", "openai", "--delay", str(delay))
        self.llm = self._spawn("fake-model", *(model or echo))
        api, llm = self.api.ready_line(), self.llm.ready_line()
        self.api_url, self.token, self.llm_url = api["base_url"], api["token"], llm["base_url"]
        self.answers = Answers(api["control"])
        self.llm_control = llm["control"]

    def _spawn(self, name: str, module: str, *args: str) -> Child:
        child = Child.python(name, module, *args, log_dir=self.tmp, cwd=ROOT)
        self.children[name] = child
        return child

    async def start(self, names: list[str]) -> None:
        common = ["--llm", self.llm_url, "--api", self.api_url, "--token", self.token]
        for name in names:
            port = free_port()
            self.urls[name] = [f"http://127.0.0.1:{port}/webhook/telegram"]
            if name in ("skillgate", "quotas", *pg.CONTENDERS):
                database = None
                if name in pg.CONTENDERS:
                    assert self.postgres is not None
                    database = await self.postgres.database(f"bench_{name}")
                child = self._skillgate(name, port, database)
                await wait_healthy(f"http://127.0.0.1:{port}/healthz", child)
                if name == "replicas":  # the second, on the same database and data dir
                    second = free_port()
                    self.urls[name].append(f"http://127.0.0.1:{second}/webhook/telegram")
                    child = self._skillgate(f"{name}#2", second, database)
                    await wait_healthy(f"http://127.0.0.1:{second}/healthz", child)
            else:
                module = f"bench.{name}_bot"
                child = self._spawn(name, module, *common, "--secret", SECRET, "--port", str(port))
                child.ready_line()

    def _skillgate(self, name: str, port: int, database: str | None = None) -> Child:
        settings = {
            "SKILLGATE_DATA_DIR": str(self.tmp / f"{name.split('#')[0]}-data"),
            "TELEGRAM_BOT_TOKEN": self.token,
            "TELEGRAM_WEBHOOK_SECRET": SECRET,
            "TELEGRAM_API_BASE_URL": self.api_url,
            # The fake Bot API has no flood control; Telegram's ~30/s would cap the run.
            "TELEGRAM_MAX_MESSAGES_PER_SECOND": "0",
            "LLM_BASE_URL": self.llm_url,
            "LLM_MODEL": "fake-model",
        }
        settings |= self.settings
        if name == "quotas":
            settings |= QUOTAS
        if database is not None:
            settings["SKILLGATE_DATABASE_URL"] = database
        child = skillgate_serve(name, port, settings, self.tmp)
        self.children[name] = child
        return child

    def cpu(self) -> dict[str, float]:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        times: dict[str, float] = {}
        for name, child in self.children.items():  # "replicas#2" counts as "replicas"
            group = name.split("#")[0]
            times[group] = times.get(group, 0.0) + child.cpu()
        if self.postgres is not None:
            times[pg.SERVER] = self.postgres.cpu()
        times["load generator"] = usage.ru_utime + usage.ru_stime
        times["machine"] = machine_busy_seconds()
        return times

    def stop(self) -> None:
        for child in reversed(self.children.values()):
            child.stop()
        if self.postgres is not None:
            self.postgres.stop()


async def run_phase(
    rig: Rig,
    session: aiohttp.ClientSession,
    name: str,
    batch: Batch,
    rate: float | None,
    conns: int,
) -> Phase:
    """Post a batch (at `rate`, or flat out when None) and collect its answers."""
    before = rig.cpu()
    async with Poster(rig.urls[name], SECRET, conns) as poster:
        sent = await (poster.flat_out(batch) if rate is None else poster.at_rate(batch, rate))
    await rig.answers.wait(session, len(batch.keys), stall=10.0)
    after = rig.cpu()
    arrivals, _methods = await rig.answers.drain(session)
    async with session.post(f"{rig.llm_control}/drain") as resp:
        await resp.read()
    latencies = [(arrivals[k] - sent.at[k]) * 1000 for k in batch.keys if k in arrivals]
    last = max((arrivals[k] for k in batch.keys if k in arrivals), default=sent.first)
    failed = sum(n for status, n in sent.statuses.items() if status != 200)
    return Phase(
        sent=len(batch.keys),
        answered=len(latencies),
        latencies_ms=latencies,
        seconds=last - sent.first,
        cpu={k: after[k] - before[k] for k in after},
        failed_posts=failed,
    )


async def run(args: argparse.Namespace, tmp: Path) -> Results:
    names = [n for n in CONTENDERS if n in args.only.split(",")]
    postgres = pg.Server(args.postgres) if set(names) & set(pg.CONTENDERS) else None
    rig = Rig(tmp, args.fake_api == "lean", args.model_latency, postgres)
    results = Results({n: [] for n in names}, {n: [] for n in names})
    phase_no, update_id = 0, 1

    def batch(count: int) -> Batch:
        nonlocal phase_no, update_id
        phase_no += 1
        update_id += count
        return make_batch(phase_no, count, args.chats, update_id - count)

    profilers: list[Child] = []
    try:
        await rig.start(names)
        async with aiohttp.ClientSession() as session:
            for name in names:  # warm-up: connection pools, lazy imports, first sessions
                warm = batch(int(args.rate))
                await run_phase(rig, session, name, warm, args.rate / 2, args.conns)
            if args.profile:
                profilers = [profile(rig.children[n], args.profile) for n in names]
            for round_no in range(1, args.rounds + 1):
                for name in names:
                    fixed = batch(int(args.rate * args.seconds))
                    phase = await run_phase(rig, session, name, fixed, args.rate, args.conns)
                    results.fixed[name].append(phase)
                    flat = await run_phase(rig, session, name, batch(args.burst), None, args.conns)
                    results.flat[name].append(flat)
                    print(
                        f"round {round_no} {name:>9}: {args.rate:.0f}/s p50 "
                        f"{percentile(phase.latencies_ms, 50):.1f} ms p99 "
                        f"{percentile(phase.latencies_ms, 99):.1f} ms; flat out "
                        f"{flat.throughput:.0f}/s ({flat.answered}/{flat.sent} answered)",
                        flush=True,
                    )
        if not args.model_latency:  # a waiting model would only add its sleep to every call
            results.steps = await floor.measure(rig.llm_url, rig.api_url, rig.token)
    finally:
        for profiler in profilers:
            profiler.proc.send_signal(signal.SIGINT)
            profiler.proc.wait(30)
        rig.stop()
    return results


def profile(child: Child, out: Path) -> Child:
    """Sample a contender with py-spy (collapsed stacks) until the run ends."""
    out.mkdir(parents=True, exist_ok=True)
    argv = ["py-spy", "record", "--pid", str(child.pid), "--rate", "250", "--nonblocking"]
    argv += ["--format", "raw", "--output", str(out / f"{child.name}.txt")]
    spy = Path(sys.executable).with_name("py-spy")
    if spy.exists():
        argv[0] = str(spy)
    return Child(f"py-spy-{child.name}", argv, out)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds of A B C (default 3)")
    parser.add_argument("--rate", type=float, default=150, help="fixed rate, updates/s")
    parser.add_argument("--seconds", type=float, default=4, help="fixed-rate phase length, s")
    parser.add_argument("--burst", type=int, default=1500, help="updates in the flat-out phase")
    parser.add_argument("--conns", type=int, default=40, help="webhook connections (default 40)")
    parser.add_argument("--chats", type=int, default=1000, help="distinct chats per phase")
    parser.add_argument(
        "--only",
        default=DEFAULT_CONTENDERS,
        help=f"contenders to run, of {','.join(CONTENDERS)} (default {DEFAULT_CONTENDERS})",
    )
    parser.add_argument("--fake-api", choices=["recording", "lean"], default="recording")
    parser.add_argument(
        "--model-latency", type=float, default=0.0, help="seconds the fake model takes per answer"
    )
    parser.add_argument(
        "--postgres",
        help="a PostgreSQL server URL for the postgres contenders (default: start one)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the logs and the database")
    parser.add_argument("--profile", type=Path, help="py-spy every contender into this folder")
    parser.add_argument("--write", action="store_true", help="update docs/BENCHMARKS.md")
    args = parser.parse_args()
    started = time.monotonic()
    results = run_in_scratch(lambda tmp: run(args, tmp), keep=args.keep)
    publish("webhook", render(results, args), started, write=args.write)


if __name__ == "__main__":
    main()
