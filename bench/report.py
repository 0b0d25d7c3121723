"""What every benchmark prints and records: the machine, tables, ratios, its docs section."""

from __future__ import annotations

import asyncio
import math
import os
import platform
import re
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable, Coroutine, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

DOC = Path(__file__).resolve().parent.parent / "docs" / "BENCHMARKS.md"
PACKAGES = ("aiohttp", "python-telegram-bot", "openai", "httpx", "line-bot-sdk", "pydantic")


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo ("unknown" elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine() -> str:
    """One line naming the machine and the software measured."""
    versions = []
    for name in PACKAGES:
        try:
            versions.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"{os.cpu_count()} CPUs ({cpu_model()}), Linux {platform.release()}, "
        f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, "
        f"{', '.join(versions)}; load average at start {load}"
    )


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of unsorted values; NaN when empty."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def median(values: Sequence[float]) -> float:
    """The median, NaN when empty."""
    if not values:
        return math.nan
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def spread(values: Sequence[float], fmt: str = "{:.1f}") -> str:
    """Per-round values as "median (min-max)", or the value alone for a single round."""
    if len(values) <= 1:
        return fmt.format(values[0]) if values else "n/a"
    return f"{fmt.format(median(values))} ({fmt.format(min(values))}-{fmt.format(max(values))})"


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table, padded so it also reads well in a terminal."""
    cells = [[str(h) for h in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]

    def line(row: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |"

    rule = "| " + " | ".join("-" * w for w in widths) + " |"
    return "\n".join([line(cells[0]), rule, *(line(r) for r in cells[1:])])


def verdict(value: float, target: float, *, at_most: bool) -> str:
    """Whether a value meets its target: "met" or "MISSED"."""
    ok = value <= target if at_most else value >= target
    return "met" if ok else "MISSED"


def write_section(name: str, body: str, doc: Path = DOC) -> None:
    """Replace the text between this benchmark's markers in docs/BENCHMARKS.md."""
    start, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    stamp = time.strftime("%Y-%m-%d %H:%M %Z")
    block = f"{start}\n_Last run {stamp}._\n\n{body.strip()}\n{end}"
    text = doc.read_text(encoding="utf-8") if doc.exists() else "# Benchmarks\n"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.DOTALL)
    if pattern.search(text):
        text = pattern.sub(lambda _m: block, text)
    else:
        text = text.rstrip() + f"\n\n{block}\n"
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(text, encoding="utf-8")


T = TypeVar("T")


def run_in_scratch(run: Callable[[Path], Coroutine[Any, Any, T]], *, keep: bool = False) -> T:
    """Run `run(folder)` in a fresh temporary folder, removed afterwards unless `keep`."""
    tmp = Path(tempfile.mkdtemp(prefix="skillgate-bench-"))
    try:
        return asyncio.run(run(tmp))
    finally:
        if keep:
            print(f"logs and data kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def publish(name: str, text: str, started: float, *, write: bool) -> None:
    """Print a benchmark's tables and how long it took; with `write`, update its doc section."""
    print(f"\n{text}\n\n(run took {time.monotonic() - started:.0f} s)")
    if write:
        write_section(name, text)
