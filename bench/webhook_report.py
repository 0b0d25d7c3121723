"""The webhook benchmark's results: phases, the tables, the ratios and the verdicts."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from bench import pg
from bench.report import machine, median, percentile, spread, table

LABELS = {
    "bare": "bare aiohttp (limit)",
    "ptb": "plain PTB bot",
    "aiogram": "aiogram 3 bot",
    "skillgate": "skillgate serve",
    "quotas": "skillgate serve, daily limits on",
    **pg.LABELS,
}


@dataclass
class Phase:
    """One contender, one phase of one round."""

    sent: int
    answered: int
    latencies_ms: list[float]
    seconds: float
    cpu: dict[str, float]
    failed_posts: int

    @property
    def throughput(self) -> float:
        return self.answered / self.seconds if self.seconds > 0 else 0.0

    def cpu_per_answer(self, name: str) -> float:
        """The process's CPU milliseconds per answer during the phase."""
        return self.cpu[name] / self.answered * 1000 if self.answered else float("nan")

    def share(self, name: str) -> float:
        """The process's share of one core during the phase, in %."""
        return self.cpu[name] / self.seconds * 100 if self.seconds > 0 else float("nan")

    @property
    def others(self) -> float:
        """Cores kept busy by processes outside the benchmark during the phase."""
        ours = sum(v for k, v in self.cpu.items() if k != "machine")
        return max(0.0, self.cpu["machine"] - ours) / self.seconds if self.seconds > 0 else 0.0


@dataclass
class Results:
    """Every phase of every round, per contender."""

    fixed: dict[str, list[Phase]] = field(default_factory=dict)
    flat: dict[str, list[Phase]] = field(default_factory=dict)
    steps: list[list[str]] = field(default_factory=list)


def paired(results: dict[str, list[Phase]], a: str, b: str, metric: str) -> list[float]:
    """Per-round values of `a` against `b`: a ratio of throughputs or a difference of p99s."""
    out = []
    for pa, pb in zip(results.get(a, []), results.get(b, []), strict=False):
        if metric == "throughput":
            out.append(pa.throughput / pb.throughput if pb.throughput else float("nan"))
        else:
            out.append(percentile(pa.latencies_ms, 99) - percentile(pb.latencies_ms, 99))
    return out


def render(results: Results, args: argparse.Namespace) -> str:
    """The tables, the ratios and the verdicts, as Markdown."""
    names = list(results.fixed)
    fixed_rows, flat_rows = [], []
    for n in names:
        fx, fl = results.fixed[n], results.flat[n]
        fixed_rows.append(
            [
                LABELS[n],
                f"{sum(p.answered for p in fx)}/{sum(p.sent for p in fx)}",
                spread([percentile(p.latencies_ms, 50) for p in fx]),
                spread([percentile(p.latencies_ms, 99) for p in fx]),
                spread(paired(results.fixed, n, "bare", "p99")) if "bare" in names else "n/a",
                spread([p.cpu_per_answer(n) for p in fx], "{:.2f}"),
                spread([p.share(n) for p in fx], "{:.0f}"),
                spread([p.others for p in fx], "{:.2f}"),
            ]
        )
        flat_rows.append(
            [
                LABELS[n],
                f"{sum(p.answered for p in fl)}/{sum(p.sent for p in fl)}",
                spread([p.throughput for p in fl], "{:.0f}"),
                spread(paired(results.flat, n, "bare", "throughput"), "{:.2f}")
                if "bare" in names
                else "n/a",
                spread(paired(results.flat, n, "ptb", "throughput"), "{:.2f}")
                if "ptb" in names
                else "n/a",
                spread(paired(results.flat, n, "aiogram", "throughput"), "{:.2f}")
                if "aiogram" in names
                else "n/a",
                spread([p.cpu_per_answer(n) for p in fl], "{:.2f}"),
                spread([p.share("fake-bot-api") for p in fl], "{:.0f}"),
                spread([p.share("fake-model") for p in fl], "{:.0f}"),
                spread([p.others for p in fl], "{:.2f}"),
            ]
        )
    lines = [
        f"Machine: {machine()}.",
        "",
        f"Fixed rate: {args.rate:.0f} updates/s for {args.seconds:.0f} s per round, "
        f"{args.rounds} rounds, {args.chats} chats round-robin, fake Bot API "
        f"`{args.fake_api}`, model latency {args.model_latency:g} s. "
        "Latency is from the webhook POST to the answer's sendMessage "
        "arriving at the fake Bot API; median of the per-round values (range in brackets). "
        "CPU is the contender's own CPU time; other load is what processes outside the "
        "benchmark (other users of the machine) kept busy, in cores, from /proc/stat.",
        "",
        table(
            [
                "contender",
                "answered",
                "p50 ms",
                "p99 ms",
                "p99 over bare, ms",
                "CPU ms/answer",
                "CPU % of a core",
                "other load, cores",
            ],
            fixed_rows,
        ),
        "",
        f"Flat out: {args.burst} updates per round over {args.conns} webhook connections. "
        "Throughput is answers per second from the first POST to the last answer; the "
        "fakes' CPU is their share of one core during the phase (near 100 % would make "
        "them the bottleneck).",
        "",
        table(
            [
                "contender",
                "answered",
                "answers/s",
                "vs bare",
                "vs PTB",
                "vs aiogram",
                "CPU ms/answer",
                "fake Bot API CPU %",
                "fake model CPU %",
                "other load, cores",
            ],
            flat_rows,
        ),
    ]
    if "skillgate" in names:
        lines += ["", targets(results, names)]
    if "skillgate" in names and set(names) & set(pg.CONTENDERS):
        lines += [
            "",
            "PostgreSQL beside SQLite, flat out (per-round medians, range in brackets); the "
            "server's CPU is that of its own processes during the phase.",
            "",
            pg.render(results.flat),
        ]
    if results.steps:
        lines += [
            "",
            "Each step on its own, one call after another from one process against the same "
            "fakes: CPU milliseconds per call the way the bare handler does it (raw aiohttp) "
            "and the way the gateway does it (its model call on the openai client's pool, "
            "python-telegram-bot, the store).",
            "",
            table(["step", "bare, CPU ms", "gateway, CPU ms"], results.steps),
        ]
    return "\n".join(lines)


def targets(results: Results, names: list[str]) -> str:
    """Skillgate against the targets, from the per-round paired values."""
    rows = []

    def ratio_row(label: str, other: str, goal: float) -> None:
        ratios = paired(results.flat, "skillgate", other, "throughput")
        ratio = median(ratios)
        rows.append([label, f">= {goal}x", f"{ratio:.2f}x ({span(ratios)})", ratio >= goal])

    if "aiogram" in names:
        ratio_row("throughput vs aiogram", "aiogram", 1.1)
    if "bare" in names:
        ratio_row("throughput vs bare limit", "bare", 0.35)  # #52 point 3
        overs = paired(results.fixed, "skillgate", "bare", "p99")
        worst = max(overs)
        rows.append(
            [
                "p99 over bare at fixed rate, every round",
                "<= 25 ms",
                f"{worst:.1f} ms worst ({span(overs, '{:.1f}')})",
                worst <= 25,
            ]
        )
    cpu = median([p.cpu_per_answer("skillgate") for p in results.flat["skillgate"]])
    rows.append(["CPU per answer flat out", "<= 2.5 ms", f"{cpu:.2f} ms", cpu <= 2.5])
    if "ptb" in names:
        ratio = median(paired(results.flat, "skillgate", "ptb", "throughput"))
        rows.append(["throughput vs plain PTB", ">= 1x", f"{ratio:.2f}x", ratio >= 1.0])
    return table(
        ["target", "goal", "skillgate", "verdict"],
        [[*r[:3], "met" if r[3] else "MISSED"] for r in rows],
    )


def span(values: list[float], fmt: str = "{:.2f}") -> str:
    """The range of per-round values, "min-max"."""
    return f"{fmt.format(min(values))}-{fmt.format(max(values))}" if values else "n/a"
