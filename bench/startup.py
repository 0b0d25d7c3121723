"""Benchmark (e): time to a healthy `skillgate serve` with a large skill library.

A data dir gets --skills generated skills on disk (as `bench.skill_index` makes them,
their files dated an hour back, as a library written earlier would be), then
`skillgate serve` starts on it with the configured channels against loopback fakes:
first on a fresh database (every skill read, parsed and registered), then --warm
times more on the same data dir (nothing changed on disk). Time to healthy is from
spawning the process to the first 200 from /healthz, polled every 10 ms; the same
starts with no library beside them show what the library adds. Run:

    python -m bench.startup [--skills 10000] [--warm 3] [--configs telegram+line] [--write]
    python -m bench.startup --calibration [--warm 3] [--burst 200]

`--calibration` prices the same-claim judge's calibration instead: each start is on a
fresh data dir (nothing calibrated yet), alternately with synthesis on (the calibration
runs once the first answer went out) and off (none runs). Measured: the time to healthy,
then how long a burst of webhooks sent at once takes to be answered and its CPU, and
when the calibration was stored. A healthy start is not delayed when both are alike.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.memory import Fakes, burst
from bench.procs import free_port, skillgate_serve, wait_healthy
from bench.report import machine, median, publish, run_in_scratch, spread, table, verdict
from bench.skill_index import make_library

CONFIGS = ("telegram+line",)
PLAIN_TARGET_S = 1.0
"""A warm start without a library, to healthy, on a quiet machine."""
LIBRARY_TARGET = 1.3
"""A warm start with the library against the same start without one."""


@dataclass
class Starts:
    """Times to healthy of one data dir: its first start, then the warm ones; and the CPU
    seconds the process had used by then (what other load on the machine does not stretch)."""

    first: float = 0.0
    first_cpu: float = 0.0
    warm: list[float] = field(default_factory=list)
    warm_cpu: list[float] = field(default_factory=list)


async def start_once(config: str, fakes: Fakes, data: Path, tmp: Path) -> tuple[float, float]:
    """Seconds to healthy, and the CPU seconds used by then."""
    port = free_port()
    child = skillgate_serve(f"skillgate-{data.name}", port, fakes.settings(config, data), tmp)
    try:
        healthy = await wait_healthy(f"http://127.0.0.1:{port}/healthz", child, timeout=120)
        return healthy, child.cpu()
    finally:
        child.stop()


def library(data: Path, skills: int) -> None:
    """`skills` generated skills in the data dir's skills folder, last written an hour ago."""
    root = data / "skills"
    make_library(root, skills, random.Random(skills))
    an_hour_ago = time.time() - 3600
    for folder in root.iterdir():
        os.utime(folder / "SKILL.md", (an_hour_ago, an_hour_ago))


async def run(args: argparse.Namespace, tmp: Path) -> dict[tuple[str, int], Starts]:
    fakes = Fakes(tmp)
    results: dict[tuple[str, int], Starts] = {}
    try:
        for config in args.configs.split(","):
            for skills in (0, args.skills):
                data = tmp / f"data-{config}-{skills}"
                if skills:
                    library(data, skills)
                starts = results[(config, skills)] = Starts()
                starts.first, starts.first_cpu = await start_once(config, fakes, data, tmp)
                print(f"{config} {skills} skills: first start {starts.first:.2f} s", flush=True)
        for i in range(args.warm):  # alternate the data dirs, so load hits both alike
            for (config, skills), starts in results.items():
                data = tmp / f"data-{config}-{skills}"
                healthy, cpu = await start_once(config, fakes, data, tmp)
                starts.warm.append(healthy)
                starts.warm_cpu.append(cpu)
                print(f"{config} {skills} skills: warm {i + 1} {starts.warm[-1]:.2f} s", flush=True)
    finally:
        fakes.stop()
    return results


def ratios(library: list[float], plain: list[float]) -> list[float]:
    """Each round's start with the library over the same round's start without one."""
    return [a / b for a, b in zip(library, plain, strict=False) if b > 0]


def render(results: dict[tuple[str, int], Starts], args: argparse.Namespace) -> str:
    rows, verdicts = [], []
    for (config, skills), starts in results.items():
        rows.append(
            [
                config,
                f"{skills:,}",
                f"{starts.first:.2f}",
                f"{starts.first_cpu:.2f}",
                spread(starts.warm, "{:.2f}"),
                spread(starts.warm_cpu, "{:.2f}"),
            ]
        )
        plain = results.get((config, 0))
        if not skills:
            warm = median(starts.warm)
            verdicts.append(
                [
                    f"{config}, no library: warm start <= {PLAIN_TARGET_S:.1f} s",
                    f"{warm:.2f} s (CPU {median(starts.warm_cpu):.2f} s)",
                    verdict(warm, PLAIN_TARGET_S, at_most=True),
                ]
            )
        elif plain is not None:
            wall = ratios(starts.warm, plain.warm)
            cpu = ratios(starts.warm_cpu, plain.warm_cpu)
            verdicts.append(
                [
                    f"{config}, {skills:,} skills: <= {LIBRARY_TARGET:.1f}x the start without",
                    f"{spread(wall, '{:.2f}')}x (CPU {spread(cpu, '{:.2f}')}x)",
                    verdict(median(wall), LIBRARY_TARGET, at_most=True),
                ]
            )
    return "\n".join(
        [
            f"Machine: {machine()}.",
            "",
            f"Generated skills dated an hour back; one first start on a fresh database, then "
            f"{args.warm} warm starts of the same data dir (median, range in brackets), "
            "alternating with the same configuration without a library. Seconds from spawning "
            "`skillgate serve` to the first 200 from /healthz; CPU is the CPU time the process "
            "had used by then (user and system), which other load on the machine does not "
            "stretch. Ratios are taken per round (each start with the library against the "
            "start without one just before it).",
            "",
            table(
                [
                    "channels",
                    "skills",
                    "first start, s",
                    "its CPU, s",
                    "warm start, s",
                    "its CPU, s",
                ],
                rows,
            ),
            "",
            table(["target", "warm starts", "verdict"], verdicts),
        ]
    )


@dataclass
class CalibratedStart:
    """One start on a fresh data dir, synthesis on or off."""

    healthy: float
    healthy_cpu: float
    """The process's CPU seconds by then (what other load does not stretch)."""
    answered_s: float
    """From healthy to the last answer of the burst."""
    answered_cpu: float
    """The process's CPU seconds over the burst."""
    calibrated_s: float | None
    """From healthy to the calibration's row in the database (None: none was stored)."""


def calibrated_at(db: Path) -> bool:
    with sqlite3.connect(db, timeout=10) as conn:
        try:
            return bool(conn.execute("select count(*) from judge_calibrations").fetchone()[0])
        except sqlite3.OperationalError:  # not migrated yet
            return False


async def start_calibrating(
    on: bool, fakes: Fakes, data: Path, tmp: Path, count: int
) -> CalibratedStart:
    port = free_port()
    values = fakes.settings("telegram", data)
    values["SKILLGATE_SYNTHESIS_INTERVAL_MINUTES"] = "60" if on else "0"
    child = skillgate_serve(f"skillgate-{data.name}", port, values, tmp)
    base = f"http://127.0.0.1:{port}"
    try:
        healthy = await wait_healthy(f"{base}/healthz", child, timeout=120)
        since, cpu = time.monotonic(), child.cpu()
        healthy_cpu = cpu
        answered, sent = await burst(base, "telegram", fakes, count)
        if answered != sent:
            raise RuntimeError(f"{sent - answered} of {sent} webhooks unanswered")
        answered_s, answered_cpu = time.monotonic() - since, child.cpu() - cpu
        calibrated = None
        if on:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if calibrated_at(data / "skillgate.db"):
                    calibrated = time.monotonic() - since
                    break
                await asyncio.sleep(0.05)
        return CalibratedStart(healthy, healthy_cpu, answered_s, answered_cpu, calibrated)
    finally:
        child.stop()


async def run_calibration(args: argparse.Namespace, tmp: Path) -> dict[bool, list[CalibratedStart]]:
    fakes = Fakes(tmp)
    results: dict[bool, list[CalibratedStart]] = {False: [], True: []}
    try:
        for i in range(args.warm):
            for on in (False, True):
                data = tmp / f"data-{i}-{'on' if on else 'off'}"
                r = await start_calibrating(on, fakes, data, tmp, args.burst)
                results[on].append(r)
                print(
                    f"calibration {'on ' if on else 'off'}: healthy {r.healthy:.2f} s, burst "
                    f"{r.answered_s:.2f} s ({r.answered_cpu:.2f} s CPU), calibrated "
                    + ("-" if r.calibrated_s is None else f"{r.calibrated_s:.2f} s"),
                    flush=True,
                )
    finally:
        fakes.stop()
    return results


def render_calibration(results: dict[bool, list[CalibratedStart]], args: argparse.Namespace) -> str:
    rows = []
    for on, starts in results.items():
        done = [s.calibrated_s for s in starts if s.calibrated_s is not None]
        rows.append(
            [
                "on" if on else "off",
                spread([s.healthy for s in starts], "{:.2f}"),
                spread([s.healthy_cpu for s in starts], "{:.2f}"),
                spread([s.answered_s for s in starts], "{:.2f}"),
                spread([s.answered_cpu for s in starts], "{:.2f}"),
                spread(done, "{:.2f}") if done else "-",
            ]
        )
    without, calibrating = results[False], results[True]
    healthy = ratios([s.healthy for s in calibrating], [s.healthy for s in without])
    answered = ratios([s.answered_s for s in calibrating], [s.answered_s for s in without])
    cpu = ratios([s.healthy_cpu for s in calibrating], [s.healthy_cpu for s in without])
    return "\n".join(
        [
            f"Machine: {machine()}.",
            "",
            f"Telegram; {args.warm} starts each way on a fresh data dir, alternating; right "
            f"after healthy a burst of {args.burst} webhooks over 40 connections. Calibration "
            "on: synthesis on, so the same-claim judge is calibrated against the fake model "
            "once the first answer went out; off: synthesis off. Median, range in brackets.",
            "",
            table(
                [
                    "calibration",
                    "healthy after, s",
                    "its CPU, s",
                    "burst answered after, s",
                    "burst CPU, s",
                    "calibration stored after, s",
                ],
                rows,
            ),
            "",
            f"On against off, per round: healthy {spread(healthy, '{:.2f}')}x (its CPU "
            f"{spread(cpu, '{:.2f}')}x), the burst "
            f"answered {spread(answered, '{:.2f}')}x.",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--skills", type=int, default=10_000, help="skills in the library")
    parser.add_argument("--warm", type=int, default=3, help="warm starts per data dir")
    parser.add_argument("--configs", default=",".join(CONFIGS), help="channel configurations")
    parser.add_argument("--write", action="store_true", help="update docs/BENCHMARKS.md")
    parser.add_argument(
        "--calibration", action="store_true", help="calibration on against off (see above)"
    )
    parser.add_argument("--burst", type=int, default=200, help="webhooks after healthy")
    args = parser.parse_args()
    started = time.monotonic()
    if args.calibration:
        calibrated = run_in_scratch(lambda tmp: run_calibration(args, tmp))
        text = render_calibration(calibrated, args)
        publish("startup-calibration", text, started, write=args.write)
        return
    results = run_in_scratch(lambda tmp: run(args, tmp))
    publish("startup", render(results, args), started, write=args.write)


if __name__ == "__main__":
    main()
