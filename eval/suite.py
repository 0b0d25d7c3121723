"""Every world, phrase bank and seed: the runs the report compares, two at a time in processes.

The held-out bank's runs lead (`Suite.headline`); the same worlds and seeds with the
bank the model's reader was built beside show how much that reader is flattered.
Each run is independent (its own fakes on loopback, its own temporary data dir), so
runs are spread over worker processes; the figures do not depend on how many.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

from eval.config import WORLDS, Config, World
from eval.figures import Result
from eval.simulation import Simulation
from eval.world import BANKS


def run_one(config: Config) -> Result:
    """One run in this process (the unit of work of a worker)."""
    from gateway.logs import setup_logging

    setup_logging("WARNING")
    started = time.monotonic()
    result = asyncio.run(Simulation(config).run())
    result.seconds = time.monotonic() - started
    return result


@dataclass
class Spread:
    """A figure over the seeds of one world: median and range."""

    values: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def low(self) -> float:
        return min(self.values)

    @property
    def high(self) -> float:
        return max(self.values)


@dataclass
class WorldRuns:
    """The runs of one world with one phrase bank, by seed."""

    world: World
    bank: str
    runs: list[Result] = field(default_factory=list)

    def spread(self, figure: Callable[[Result], float]) -> Spread:
        return Spread([figure(r) for r in self.runs])


def noise_free_before(r: Result) -> float:
    return r.before.pleased_rate


def noise_free_after(r: Result) -> float:
    return r.after.pleased_rate


def noise_free_gain(r: Result) -> float:
    return r.after.pleased_rate - r.before.pleased_rate


@dataclass
class Suite:
    """The whole comparison."""

    base: Config
    seeds: list[int]
    banks: list[str]
    """The phrase banks run, the headline's first."""
    worlds: list[WorldRuns]
    """World by world, and within a world bank by bank in the order of `banks`."""
    seconds: float = 0.0
    jobs: int = 1

    @property
    def headline(self) -> list[WorldRuns]:
        """The runs with the first bank (the held-out one, unless it was left out)."""
        return self.of(self.banks[0])

    def of(self, bank: str) -> list[WorldRuns]:
        """Every world's runs with one bank."""
        return [w for w in self.worlds if w.bank == bank]


def run_suite(
    base: Config,
    seeds: Sequence[int],
    worlds: Sequence[World] = WORLDS,
    banks: Sequence[str] = tuple(BANKS),
    *,
    jobs: int = 2,
    progress: Callable[[str], None] | None = None,
) -> Suite:
    """Run every world with every bank and seed; results in world, bank, then seed order."""
    started = time.monotonic()
    configs = [w.config(base, s, b) for w in worlds for b in banks for s in seeds]
    results: list[Result] = []
    if jobs <= 1:
        for c in configs:
            results.append(run_one(c))
            _tell(progress, results[-1])
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            for result in pool.map(run_one, configs):
                results.append(result)
                _tell(progress, result)
    grouped = [WorldRuns(w, b) for w in worlds for b in banks]
    for n, result in enumerate(results):
        grouped[n // len(seeds)].runs.append(result)
    return Suite(base, list(seeds), list(banks), grouped, time.monotonic() - started, jobs)


def _tell(progress: Callable[[str], None] | None, r: Result) -> None:
    if progress is not None:
        progress(
            f"{r.config.world}, {r.config.bank} bank, seed {r.config.seed}: answers meeting"
            " every preference"
            f" {r.before.pleased_rate:.0%} -> {r.after.pleased_rate:.0%} ({r.seconds:.0f} s)"
        )


def default_jobs() -> int:
    """Two workers, or one on a single-core machine."""
    return min(2, os.cpu_count() or 1)
