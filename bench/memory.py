"""Benchmark (c): resident memory of `skillgate serve` idle and under load; time to healthy.

For each configuration (no channel, Telegram, Telegram and LINE; channels against
loopback fakes, a zero-latency fake model) a fresh `skillgate serve` is started; the
time from spawning it to the first 200 from /healthz is taken, then VmRSS idle, its peak
during a burst of webhooks (sampled every 20 ms) and idle again once every answer was
sent. Each configuration runs --runs times; the table gives medians and ranges. Run:

    python -m bench.memory [--runs 3] [--burst 1000] [--write]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from bench.loadgen import Answers, make_batch, post_all
from bench.procs import Child, free_port, skillgate_serve, wait_healthy
from bench.report import (
    machine,
    median,
    publish,
    run_in_scratch,
    spread,
    table,
    verdict,
)
from tests.fakes.line_api import sign, text_event, webhook_body

ROOT = Path(__file__).resolve().parent.parent
SECRET = "bench-webhook-secret"
LINE_SECRET = "bench-line-channel-secret"
CONFIGS = ("none", "telegram", "telegram+line")
RSS_TARGET_MB = 100.0
"""Idle, at start and after a burst (#52: Telegram and LINE at most 100 MB)."""
PEAK_TARGET_MB = 120.0
"""The highest VmRSS seen during the burst."""
HEALTHY_TARGET_S = 2.0


@dataclass
class Run:
    """One start of the gateway."""

    healthy_s: float
    idle_mb: float
    peak_mb: float | None
    after_mb: float | None
    answered: int
    sent: int


class Fakes:
    """The fake Bot API, LINE API and model, started once for every run."""

    def __init__(self, tmp: Path) -> None:
        self.children = [
            Child.python(n, "bench.fakes", n, log_dir=tmp, cwd=ROOT)
            for n in ("telegram", "line", "openai")
        ]
        self.telegram, self.line, self.llm = (c.ready_line() for c in self.children)

    def settings(self, config: str, data: Path) -> dict[str, str]:
        values = {
            "SKILLGATE_DATA_DIR": str(data),
            "LLM_BASE_URL": self.llm["base_url"],
            "LLM_MODEL": "fake-model",
        }
        if "telegram" in config:
            values |= {
                "TELEGRAM_BOT_TOKEN": self.telegram["token"],
                "TELEGRAM_WEBHOOK_SECRET": SECRET,
                "TELEGRAM_API_BASE_URL": self.telegram["base_url"],
                "TELEGRAM_MAX_MESSAGES_PER_SECOND": "0",
            }
        if "line" in config:
            values |= {
                "LINE_CHANNEL_SECRET": LINE_SECRET,
                "LINE_CHANNEL_ACCESS_TOKEN": self.line["token"],
                "LINE_API_BASE_URL": self.line["base_url"],
            }
        return values

    def stop(self) -> None:
        for child in self.children:
            child.stop()


async def peak_rss(child: Child, stop: asyncio.Event) -> float:
    """The highest VmRSS seen until `stop` is set."""
    peak = child.rss()
    while not stop.is_set():
        peak = max(peak, child.rss())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.02)
    return max(peak, child.rss())


async def burst(base: str, config: str, fakes: Fakes, count: int) -> tuple[int, int]:
    """Post `count` webhooks per configured channel; (answers seen, webhooks sent)."""
    posts, answers = [], []
    async with aiohttp.ClientSession() as session:
        if "telegram" in config:
            batch = make_batch(int(time.time()), count, count, first_update_id=1)
            headers = {
                "Content-Type": "application/json",
                "X-Telegram-Bot-Api-Secret-Token": SECRET,
            }
            posts.append(post_all(f"{base}/webhook/telegram", batch.bodies, lambda _b: headers, 40))
            answers.append(Answers(fakes.telegram["control"]))
        if "line" in config:
            async with session.post(f"{fakes.line['control']}/tokens?n={count}") as resp:
                tokens = await resp.json()
            events = [
                text_event(f"hello {i}", user_id=f"U{i:032x}", reply_token=t)
                for i, t in enumerate(tokens)
            ]
            bodies = [webhook_body(e) for e in events]
            posts.append(post_all(f"{base}/webhook/line", bodies, line_headers, 40))
            answers.append(Answers(fakes.line["control"]))
        before = [await a.count(session) for a in answers]
        await asyncio.gather(*posts)
        seen = [
            await a.wait(session, b + count, stall=10.0) - b
            for a, b in zip(answers, before, strict=True)
        ]
    return sum(seen), count * len(posts)


def line_headers(body: bytes) -> dict[str, str]:
    return {"Content-Type": "application/json", "X-Line-Signature": sign(LINE_SECRET, body)}


async def one_run(config: str, fakes: Fakes, tmp: Path, count: int) -> Run:
    port = free_port()
    data = tmp / f"data-{config}-{time.monotonic_ns()}"
    child = skillgate_serve(f"skillgate-{config}", port, fakes.settings(config, data), tmp)
    base = f"http://127.0.0.1:{port}"
    try:
        healthy = await wait_healthy(f"{base}/healthz", child)
        await asyncio.sleep(1.0)
        idle = child.rss()
        if config == "none":
            return Run(healthy, idle, None, None, 0, 0)
        stop = asyncio.Event()
        sampler = asyncio.create_task(peak_rss(child, stop))
        answered, sent = await burst(base, config, fakes, count)
        stop.set()
        peak = await sampler
        await asyncio.sleep(2.0)
        return Run(healthy, idle, peak, child.rss(), answered, sent)
    finally:
        child.stop()


LAYERS = (
    ("Python, asyncio", "asyncio"),
    ("aiohttp server and client", "aiohttp.web"),
    ("pydantic, pydantic-settings", "pydantic_settings"),
    (
        "sqlite-utils (through the store), PyYAML, markdown-it",
        "gateway.store.sqlite, yaml, markdown_it",
    ),
    ("the gateway's own code (no channel)", "gateway.app"),
    ("python-telegram-bot + Telegram channel", "gateway.channels.telegram.entry"),
    ("the chat call's transport (httpx, httpx-aiohttp)", "httpx_aiohttp"),
    ("LINE channel (the Messaging API's JSON)", "gateway.channels.line.entry"),
)
"""What a Telegram and LINE gateway loads by its first answer, in the order it loads it."""
LATER = (
    ("openai client (embeddings, speech: only where configured)", "openai"),
    ("line-bot-sdk (its Flex models: an admin's first card)", "gateway.channels.line.cards"),
    ("numpy (speech only; sqlite-utils would import it at start)", "numpy"),
)
"""What it does not load for chat answers, each added on top of `LAYERS`."""
_LAYER_SCRIPT = """
import importlib, json, sys
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
out = []
for modules in json.loads(sys.argv[1]):
    for name in modules.split(", "):
        importlib.import_module(name)
    out.append(rss())
print(json.dumps(out))
"""


def import_layers() -> list[tuple[str, float]]:
    """RSS added by importing each layer, in order, in a fresh interpreter; then each of
    `LATER` on its own on top of all of them (a fresh interpreter each)."""
    argv = [sys.executable, "-c", _LAYER_SCRIPT, json.dumps([m for _, m in LAYERS])]
    totals = json.loads(subprocess.run(argv, capture_output=True, check=True, cwd=ROOT).stdout)
    layers = [
        (label, total - (totals[i - 1] if i else 0.0))
        for i, ((label, _), total) in enumerate(zip(LAYERS, totals, strict=True))
    ]
    for label, modules in LATER:
        argv[-1] = json.dumps([", ".join(m for _, m in LAYERS), modules])
        base, more = json.loads(
            subprocess.run(argv, capture_output=True, check=True, cwd=ROOT).stdout
        )
        layers.append((f"not loaded: {label}", more - base))
    return layers


def render(
    runs: dict[str, list[Run]], layers: list[tuple[str, float]], args: argparse.Namespace
) -> str:
    rows = []
    for config, rs in runs.items():
        peaks = [r.peak_mb for r in rs if r.peak_mb is not None]
        after = [r.after_mb for r in rs if r.after_mb is not None]
        idle = [r.idle_mb for r in rs]
        healthy = [r.healthy_s for r in rs]
        rows.append(
            [
                config,
                spread(healthy, "{:.2f}"),
                f"{median(healthy) / HEALTHY_TARGET_S:.2f}",
                spread(idle, "{:.0f}"),
                spread(peaks, "{:.0f}") if peaks else "n/a",
                spread(after, "{:.0f}") if after else "n/a",
                f"{median(idle) / RSS_TARGET_MB:.2f}",
                f"{median(peaks) / PEAK_TARGET_MB:.2f}" if peaks else "n/a",
                f"{sum(r.answered for r in rs)}/{sum(r.sent for r in rs)}" if peaks else "n/a",
            ]
        )
    verdicts = []
    for config, rs in runs.items():
        idle_mb = median([r.idle_mb for r in rs])
        up = median([r.healthy_s for r in rs])
        peaks = [r.peak_mb for r in rs if r.peak_mb is not None]
        peak = (
            f"{median(peaks):.0f} MB: {verdict(median(peaks), PEAK_TARGET_MB, at_most=True)}"
            if peaks
            else "n/a"
        )
        verdicts.append(
            [
                config,
                f"{idle_mb:.0f} MB: {verdict(idle_mb, RSS_TARGET_MB, at_most=True)}",
                peak,
                f"{up:.2f} s: {verdict(up, HEALTHY_TARGET_S, at_most=True)}",
            ]
        )
    return "\n".join(
        [
            f"Machine: {machine()}.",
            "",
            f"{args.runs} fresh starts per configuration; a burst of {args.burst} webhooks per "
            "configured channel over 40 connections. RSS is VmRSS in MiB; medians with the "
            "range in brackets. Idle is one second after healthy; after a burst the "
            "allocator keeps its high-water mark, so idle after load is near the peak.",
            "",
            table(
                [
                    "channels",
                    "healthy after, s",
                    "vs 2 s",
                    "idle RSS",
                    "peak under load",
                    "idle after load",
                    "vs 100 MB",
                    "peak vs 120 MB",
                    "answered",
                ],
                rows,
            ),
            "",
            table(["channels", "idle RSS <= 100 MB", "peak <= 120 MB", "healthy <= 2 s"], verdicts),
            "",
            "Where the memory goes: VmRSS added by importing each layer in turn into a fresh "
            "interpreter (MiB; the first row includes the interpreter itself); the rows "
            "marked 'not loaded' are what each would add on top, loaded only for what it "
            "names.",
            "",
            table(
                ["layer", "adds MiB", "running total"],
                [
                    [label, f"{added:.1f}", f"{total:.1f}"]
                    for (label, added), total in zip(layers, _totals(layers), strict=True)
                ],
            ),
        ]
    )


def _totals(layers: list[tuple[str, float]]) -> list[float]:
    """The running total of the loaded layers; a 'not loaded' one on top of all of those."""
    loaded = _running(a for label, a in layers if not label.startswith("not loaded"))
    return loaded + [loaded[-1] + a for _, a in layers[len(loaded) :]]


def _running(values: Iterable[float]) -> list[float]:
    out: list[float] = []
    for v in values:
        out.append((out[-1] if out else 0.0) + v)
    return out


async def run(args: argparse.Namespace, tmp: Path) -> dict[str, list[Run]]:
    fakes = Fakes(tmp)
    results: dict[str, list[Run]] = {c: [] for c in args.configs.split(",")}
    try:
        for i in range(args.runs):  # alternate configurations, like the webhook benchmark
            for config in results:
                r = await one_run(config, fakes, tmp, args.burst)
                results[config].append(r)
                print(
                    f"run {i + 1} {config:>13}: healthy {r.healthy_s:.2f} s, idle "
                    f"{r.idle_mb:.0f} MB"
                    + (
                        f", peak {r.peak_mb:.0f} MB, after {r.after_mb:.0f} MB" if r.peak_mb else ""
                    ),
                    flush=True,
                )
    finally:
        fakes.stop()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=3, help="starts per configuration")
    parser.add_argument("--burst", type=int, default=1000, help="webhooks per channel")
    parser.add_argument("--configs", default=",".join(CONFIGS), help="configurations to run")
    parser.add_argument("--write", action="store_true", help="update docs/BENCHMARKS.md")
    args = parser.parse_args()
    started = time.monotonic()
    results = run_in_scratch(lambda tmp: run(args, tmp))
    publish("memory", render(results, import_layers(), args), started, write=args.write)


if __name__ == "__main__":
    main()
