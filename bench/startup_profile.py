"""Benchmark (g2): where a plain start goes, from spawning `skillgate serve` to healthy.

A data dir with only the three bundled skills and Telegram (or `--configs telegram+line`)
against the fakes: a first start makes the database and seeds the skills, then `--runs`
plain starts (wall and CPU to the first 200 from /healthz), `--runs` starts under
`python -X importtime` (each package's imports: self times summed per package, the
gateway's per sub-package, counting only what was imported by the time it was healthy)
and one under cProfile (the main thread's time in each start-up step; the profiler slows
Python code more than C, so read the shares, not the seconds). Compiled modules are kept
between starts (`PYTHONDONTWRITEBYTECODE` cleared), as an installed gateway has them. Run:

    python -m bench.startup_profile [--runs 3] [--configs telegram] [--write]
"""

from __future__ import annotations

import argparse
import os
import pstats
import re
import sys
import time
from pathlib import Path

from bench.memory import Fakes
from bench.procs import _SETTING_PREFIXES, Child, free_port, wait_healthy
from bench.report import machine, median, publish, run_in_scratch, spread, table

IMPORT = re.compile(r"import time:\s+(\d+) \|\s+\d+ \|( *)(\S+)")
STEPS = (
    ("import the command line (`gateway.cli`)", "gateway/cli/__init__.py", "<module>"),
    ("import the application (`gateway.app` and all it imports)", "gateway/app.py", "<module>"),
    ("build the app: configured channels, their SDKs, routes", "gateway/app.py", "build_app"),
    ("start: open the parts, start the channels and the worker", "gateway/app.py", "lifecycle"),
    (
        "  the parts (store, skills; their work waits on their threads)",
        "gateway/runtime/assembly.py",
        "open_parts",
    ),
    ("  the channels (Bot API getMe, handlers)", "gateway/channels/", "start"),
)


async def start(
    argv: list[str], env: dict[str, str], tmp: Path, name: str
) -> tuple[float, float, int]:
    """Wall and CPU seconds to healthy, and the size of its log by then."""
    port = free_port()
    child = Child(name, [*argv, "--host", "127.0.0.1", "--port", str(port)], tmp, env=env, cwd=tmp)
    try:
        wall = await wait_healthy(f"http://127.0.0.1:{port}/healthz", child, timeout=120)
        return wall, child.cpu(), child.log.stat().st_size
    finally:
        child.stop()


def imports(log: Path, upto: int) -> dict[str, float]:
    """Milliseconds of imports per package (the gateway per sub-package), up to `upto` bytes."""
    out: dict[str, float] = {}
    for line in log.read_bytes()[:upto].decode(errors="replace").splitlines():
        found = IMPORT.match(line)
        if found:
            parts = found.group(3).split(".")
            key = ".".join(parts[:2]) if parts[0] == "gateway" else parts[0]
            out[key] = out.get(key, 0.0) + int(found.group(1)) / 1000
    return out


def steps(profile: Path) -> list[tuple[str, float]]:
    """Cumulative seconds of each start-up step in the main thread."""
    stats = pstats.Stats(str(profile)).stats  # type: ignore[attr-defined]
    total = max(v[3] for v in stats.values())
    out = [("whole process (main thread, profiled)", total)]
    for label, where, function in STEPS:
        seconds = sum(
            v[3] for (path, _line, name), v in stats.items() if where in path and name == function
        )
        out.append((label, seconds))
    return out


async def run(args: argparse.Namespace, tmp: Path) -> dict[str, object]:
    fakes = Fakes(tmp)
    data = tmp / "data"
    env = {k: v for k, v in os.environ.items() if not k.startswith(_SETTING_PREFIXES)}
    env |= fakes.settings(args.configs, data)
    # Compiled modules are kept, as an installed gateway has them (the first start writes them).
    env["PYTHONDONTWRITEBYTECODE"] = ""
    serve = [sys.executable, "-m", "gateway.cli", "serve"]
    plain: list[tuple[float, float]] = []
    found: list[dict[str, float]] = []
    try:
        await start(serve, env, tmp, "first")  # the database, the seeded skills
        for i in range(args.runs):
            wall, cpu, _ = await start(serve, env, tmp, f"plain-{i}")
            plain.append((wall, cpu))
            name = f"imports-{i}"
            argv = [sys.executable, "-X", "importtime", *serve[1:]]
            _, _, size = await start(argv, env, tmp, name)
            found.append(imports(tmp / f"{name}.log", size))
            print(f"start {i + 1}: healthy after {wall:.2f} s, {cpu:.2f} s CPU", flush=True)
        profile = tmp / "start.prof"
        argv = [sys.executable, "-m", "cProfile", "-o", str(profile), *serve[1:]]
        await start(argv, env, tmp, "profiled")
    finally:
        fakes.stop()
    return {"plain": plain, "imports": found, "steps": steps(profile)}


def render(results: dict[str, object], args: argparse.Namespace) -> str:
    plain = results["plain"]
    found = results["imports"]
    assert isinstance(plain, list) and isinstance(found, list)
    walls, cpus = [w for w, _ in plain], [c for _, c in plain]
    packages = sorted(
        {k for f in found for k in f}, key=lambda k: -median([f.get(k, 0.0) for f in found])
    )
    total = [sum(f.values()) for f in found]
    rows = [["all imports", spread(total, "{:.0f}"), "100"]]
    for key in packages[: args.top]:
        values = [f.get(key, 0.0) for f in found]
        rows.append([key, spread(values, "{:.0f}"), f"{median(values) / median(total) * 100:.0f}"])
    step_rows = [[label, f"{seconds:.2f}"] for label, seconds in results["steps"]]  # type: ignore[attr-defined]
    return "\n".join(
        [
            f"Machine: {machine()}.",
            "",
            f"`skillgate serve` with {args.configs}, the three bundled skills, warm data dir; "
            f"{args.runs} starts each (median, range in brackets). Healthy after "
            f"{spread(walls, '{:.2f}')} s wall, {spread(cpus, '{:.2f}')} s CPU.",
            "",
            "Imports up to healthy, by package (self times summed; `-X importtime` adds a "
            "little to each):",
            "",
            table(["package", "ms", "% of imports"], rows),
            "",
            "Start-up steps, main thread under cProfile (one start):",
            "",
            table(["step", "s (profiled)"], step_rows),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=3, help="starts of each kind")
    parser.add_argument("--configs", default="telegram", help="telegram or telegram+line")
    parser.add_argument("--top", type=int, default=20, help="packages to list")
    parser.add_argument("--write", action="store_true", help="update docs/BENCHMARKS.md")
    args = parser.parse_args()
    started = time.monotonic()
    results = run_in_scratch(lambda tmp: run(args, tmp))
    publish("startup-profile", render(results, args), started, write=args.write)


if __name__ == "__main__":
    main()
