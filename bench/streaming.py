"""Benchmark (e): streamed answers in Telegram, drafts against streaming off.

Two `skillgate serve` processes, one with TELEGRAM_STREAMING=drafts and one with `off`,
take turns answering the same load: a batch of private chats, each asking one question,
answered by a fake model (its own process) that streams every answer word by word at a
fixed rate. The fake Bot API (another process) records every call with its time. Per
answer: the time from the model's first word leaving the fake model to the first text the
user can see (a draft, or with streaming off the final message), the Bot API calls made,
the shortest gap between two drafts of one answer, and the final messages sent. Every
round runs both contenders in turn; the tables give per-round medians with their range.
A second table is the model call's own CPU cost per answer in this process, one call
after another against a model streaming the same number of words at once: whole (no
`stream`), streamed, and streamed into a PartialText that a channel reads.

    python -m bench.streaming [--rounds 3] [--chats 8] [--tokens 60] [--rate 25] [--write]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from bench.floor import cpu_per_call
from bench.loadgen import make_batch
from bench.procs import Child, free_port, machine_busy_seconds, skillgate_serve, wait_healthy
from bench.report import machine, median, percentile, publish, run_in_scratch, spread, table
from gateway.core.llm import OpenAIChat
from gateway.core.stream import PartialText

ROOT = Path(__file__).resolve().parent.parent
SECRET = "bench-streaming-secret"
CONTENDERS = ("drafts", "off")
TARGET_VISIBLE_S = 1.2
WATCHED = ("sendMessageDraft", "sendMessage", "sendChatAction")


@dataclass
class Answer:
    """One answer as the fake Bot API and the fake model saw it."""

    first_token: float
    first_visible: float
    calls: Counter[str]
    draft_gaps: list[float]

    @property
    def visible_after(self) -> float:
        """Milliseconds from the model's first word to the first text the user sees."""
        return (self.first_visible - self.first_token) * 1000


@dataclass
class Phase:
    answers: list[Answer]
    asked: int
    seconds: float
    busy_cores: float


@dataclass
class Results:
    phases: dict[str, list[Phase]] = field(default_factory=lambda: {c: [] for c in CONTENDERS})
    call_cpu: dict[str, list[float]] = field(default_factory=dict)


class Rig:
    """The fakes and both contenders, as child processes."""

    def __init__(self, tmp: Path, tokens: int, rate: float) -> None:
        self.tmp = tmp
        self.children: dict[str, Child] = {}
        self.api = self._spawn("fake-bot-api", "bench.fakes", "telegram")
        pace = ["--tokens", str(tokens), "--token-interval", f"{1 / rate:.4f}"]
        self.llm = self._spawn("fake-model", "bench.fakes", "openai", *pace)
        api, llm = self.api.ready_line(), self.llm.ready_line()
        self.api_url, self.token, self.llm_url = api["base_url"], api["token"], llm["base_url"]
        self.api_control, self.llm_control = api["control"], llm["control"]
        quick = self._spawn("quick-model", "bench.fakes", "openai", "--tokens", str(tokens))
        self.quick_url = quick.ready_line()["base_url"]
        self.urls: dict[str, str] = {}

    def _spawn(self, name: str, module: str, *args: str) -> Child:
        child = Child.python(name, module, *args, log_dir=self.tmp, cwd=ROOT)
        self.children[name] = child
        return child

    async def start(self) -> None:
        for name in CONTENDERS:
            port = free_port()
            settings = {
                "SKILLGATE_DATA_DIR": str(self.tmp / f"data-{name}"),
                "TELEGRAM_BOT_TOKEN": self.token,
                "TELEGRAM_WEBHOOK_SECRET": SECRET,
                "TELEGRAM_API_BASE_URL": self.api_url,
                "TELEGRAM_MAX_MESSAGES_PER_SECOND": "0",
                "TELEGRAM_STREAMING": name,
                "LLM_BASE_URL": self.llm_url,
                "LLM_MODEL": "fake-model",
            }
            workdir = self.tmp / name
            workdir.mkdir(parents=True, exist_ok=True)
            child = skillgate_serve(name, port, settings, workdir)
            self.children[name] = child
            await wait_healthy(f"http://127.0.0.1:{port}/healthz", child)
            self.urls[name] = f"http://127.0.0.1:{port}/webhook/telegram"

    def stop(self) -> None:
        for child in reversed(self.children.values()):
            child.stop()


async def drain(session: aiohttp.ClientSession, url: str) -> dict[str, Any]:
    async with session.post(url) as resp:
        data: dict[str, Any] = await resp.json()
        return data


async def run_phase(
    rig: Rig, session: aiohttp.ClientSession, name: str, phase_no: int, chats: int
) -> Phase:
    """One question in each of `chats` fresh chats, all at once; wait for every answer."""
    batch = make_batch(phase_no, chats, chats, phase_no * 1000)
    chat_of = {key: phase_no * 1_000_000 + 1 + i for i, key in enumerate(batch.keys)}
    headers = {"X-Telegram-Bot-Api-Secret-Token": SECRET, "Content-Type": "application/json"}
    busy = machine_busy_seconds()
    started = time.monotonic()
    for body in batch.bodies:
        async with session.post(rig.urls[name], data=body, headers=headers) as resp:
            assert resp.status == 200, await resp.text()
    calls: list[list[Any]] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        await asyncio.sleep(0.25)
        data = await drain(session, f"{rig.api_control}/drain?calls=1")
        calls += data["calls"]
        finals = {c[1] for c in calls if c[0] == "sendMessage" and c[3] == 200}
        if finals >= set(chat_of.values()):
            break
    seconds = time.monotonic() - started
    firsts = dict((await drain(session, f"{rig.llm_control}/drain"))["first_chunks"])
    by_chat: dict[int, list[list[Any]]] = defaultdict(list)
    for call in calls:
        by_chat[call[1]].append(call)
    answers = []
    for key, chat in chat_of.items():
        mine = sorted(by_chat.get(chat, []), key=lambda c: c[2])
        shown = [c[2] for c in mine if c[0] in ("sendMessageDraft", "sendMessage") and c[3] == 200]
        if key not in firsts or not shown:
            continue
        drafts = [c[2] for c in mine if c[0] == "sendMessageDraft" and c[3] == 200]
        answers.append(
            Answer(
                first_token=firsts[key],
                first_visible=shown[0],
                calls=Counter(c[0] for c in mine),
                draft_gaps=[b - a for a, b in itertools.pairwise(drafts)],
            )
        )
    cores = (machine_busy_seconds() - busy) / seconds if seconds > 0 else 0.0
    return Phase(answers, len(chat_of), seconds, cores)


async def run(args: argparse.Namespace, tmp: Path) -> Results:
    rig = Rig(tmp, args.tokens, args.rate)
    results = Results()
    phase_no = 0
    try:
        await rig.start()
        async with aiohttp.ClientSession() as session:
            for name in CONTENDERS:  # warm-up: imports, pools, first sessions
                phase_no += 1
                await run_phase(rig, session, name, phase_no, args.chats)
            for round_no in range(1, args.rounds + 1):
                for name in CONTENDERS:
                    phase_no += 1
                    phase = await run_phase(rig, session, name, phase_no, args.chats)
                    results.phases[name].append(phase)
                    visible = [a.visible_after for a in phase.answers]
                    print(
                        f"round {round_no} {name:>6}: first visible p50 "
                        f"{percentile(visible, 50):.0f} ms p95 {percentile(visible, 95):.0f} ms; "
                        f"{len(phase.answers)}/{phase.asked} answered",
                        flush=True,
                    )
            for _round in range(args.rounds):
                for mode, cpu in (await call_costs(rig.quick_url, args.calls)).items():
                    results.call_cpu.setdefault(mode, []).append(cpu)
    finally:
        rig.stop()
    return results


async def call_costs(url: str, calls: int) -> dict[str, float]:
    """CPU ms per model call: whole, streamed, and streamed into a PartialText."""
    messages = [{"role": "user", "content": "q0-1 how do I renew my passport?"}]
    costs = {}
    for mode in ("whole", "streamed", "streamed, shown"):
        llm = OpenAIChat(url, "fake-model")
        llm.streaming = mode != "whole"

        async def one(_i: int, llm: OpenAIChat = llm, shown: bool = mode.endswith("shown")) -> None:
            partial = PartialText() if shown else None
            await llm.complete(messages, partial=partial)
            if partial is not None:
                partial.visible()  # what a channel reads, about once a second

        costs[mode] = await cpu_per_call(one, calls)
        await llm.close()
    return costs


def per_round(phases: list[Phase], metric: Any) -> list[float]:
    return [metric(p) for p in phases]


def render(results: Results, args: argparse.Namespace) -> str:
    def visible(q: float) -> Any:
        return lambda p: percentile([a.visible_after for a in p.answers], q)

    def calls(method: str) -> Any:
        return lambda p: median([a.calls[method] for a in p.answers])

    def total(p: Phase) -> float:
        return median([sum(a.calls[m] for m in WATCHED) for a in p.answers])

    def min_gap(p: Phase) -> float:
        gaps = [g for a in p.answers for g in a.draft_gaps]
        return min(gaps) if gaps else float("nan")

    def finals(p: Phase) -> float:
        return max((a.calls["sendMessage"] for a in p.answers), default=0)

    def busy(p: Phase) -> float:
        return p.busy_cores

    rows = []
    metrics = [
        ("first visible text after the first token, p50 (ms)", visible(50), "{:.0f}"),
        ("first visible text after the first token, p95 (ms)", visible(95), "{:.0f}"),
        ("sendMessageDraft calls per answer (median)", calls("sendMessageDraft"), "{:.0f}"),
        ("sendMessage calls per answer (most)", finals, "{:.0f}"),
        ("sendChatAction calls per answer (median)", calls("sendChatAction"), "{:.0f}"),
        ("Bot API calls per answer (median)", total, "{:.0f}"),
        ("shortest gap between two drafts (s)", min_gap, "{:.3f}"),
        ("cores busy on the machine meanwhile", busy, "{:.1f}"),
    ]
    for label, metric, fmt in metrics:
        row: list[object] = [label]
        for name in CONTENDERS:
            values = per_round(results.phases[name], metric)
            row.append("n/a" if all(v != v for v in values) else spread(values, fmt))
        rows.append(row)
    on = median(per_round(results.phases["drafts"], visible(50)))
    off = median(per_round(results.phases["off"], visible(50)))
    p95 = max(per_round(results.phases["drafts"], visible(95)))
    gap = min(per_round(results.phases["drafts"], min_gap))
    most = max(per_round(results.phases["drafts"], finals))
    answer_s = args.tokens / args.rate
    lines = [
        f"{args.chats} private chats at once, each answer {args.tokens} words streamed at "
        f"{args.rate:g} words/s (about {answer_s:.1f} s of writing); {args.rounds} rounds, "
        "per-round values as median (range). Machine: " + machine() + ".",
        "",
        table(["", "TELEGRAM_STREAMING=drafts", "TELEGRAM_STREAMING=off"], rows),
        "",
        f"- First visible text, p50: {on:.0f} ms after the first token with drafts, {off:.0f} ms"
        " with streaming off, where the user waits for the whole answer to be written"
        f" (off / drafts = {off / max(on, 1.0):.0f}).",
        f"- Target: first visible text within {TARGET_VISIBLE_S} s of the first token (p95, "
        f"worst round): {p95:.0f} ms, {'met' if p95 <= TARGET_VISIBLE_S * 1000 else 'MISSED'}.",
        f"- Target: at most one draft a second: shortest gap between two drafts of an answer, as"
        f" they arrived, {gap:.3f} s, {'met' if gap >= 0.999 else 'MISSED'}.",
        f"- Target: exactly one final message per answer part (one part here): at most {most:.0f}"
        f" sendMessage per answer, {'met' if most == 1 else 'MISSED'}.",
    ]
    whole = median(results.call_cpu["whole"])
    streamed = median(results.call_cpu["streamed"])
    cost_rows = [
        [mode, spread(values, "{:.2f}"), f"{median(values) / whole:.2f}"]
        for mode, values in results.call_cpu.items()
    ]
    lines += [
        "",
        f"The model call's CPU per answer ({args.tokens} words, {args.calls} calls one after "
        "another, per-round median (range)):",
        "",
        table(["model call", "CPU ms per answer", "ratio to whole"], cost_rows),
        "",
        f"- Streaming costs {streamed - whole:.2f} ms of CPU more per {args.tokens}-word answer "
        f"({(streamed - whole) / args.tokens * 1000:.0f} µs per chunk).",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--chats", type=int, default=8, help="answers written at once")
    parser.add_argument("--tokens", type=int, default=60, help="words per answer")
    parser.add_argument("--rate", type=float, default=25.0, help="words per second")
    parser.add_argument("--calls", type=int, default=200, help="model calls timed per mode")
    parser.add_argument("--write", action="store_true", help="update docs/BENCHMARKS.md")
    parser.add_argument("--keep", action="store_true", help="keep logs and data")
    args = parser.parse_args()
    started = time.monotonic()
    results = run_in_scratch(lambda tmp: run(args, tmp), keep=args.keep)
    publish("streaming", render(results, args), started, write=args.write)


if __name__ == "__main__":
    main()
