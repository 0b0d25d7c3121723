"""`python -m eval`: run the learning-loop evaluation over worlds and seeds; write report and chart.

Run it from a checkout of the repository (it uses the loopback fakes in
`tests/fakes/`). Nothing leaves 127.0.0.1 unless `--real-model` points the
gateway at a model endpoint.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

from eval.chart import render as render_chart
from eval.config import WORLD_NAMES, WORLDS, Config, RealModel
from eval.report import render as render_report
from eval.simulation import Simulation
from eval.suite import Suite, default_jobs, run_suite
from eval.world import BANKS
from gateway.logs import setup_logging

REPORT = "LEARNING-REPORT.md"
CHART = "learning-chart.svg"
REAL_REPORT = "real-model-run.md"


def parser() -> argparse.ArgumentParser:
    defaults = Config()
    p = argparse.ArgumentParser(
        prog="python -m eval",
        description=(
            "Simulate users, a model and a reviewer around the real gateway, in several worlds"
            " and with several seeds, then write a Markdown report and an SVG chart."
        ),
    )
    p.add_argument("--seeds", type=int, default=5, help="seeds 1..N per world (default 5)")
    p.add_argument(
        "--world",
        action="append",
        choices=WORLD_NAMES,
        help="only this world (repeat for more; default: all of them)",
    )
    p.add_argument(
        "--bank",
        action="append",
        choices=tuple(BANKS),
        help="only this phrase bank for the users' comments (repeat for both; default: both,"
        " the held-out one as the headline)",
    )
    p.add_argument(
        "--cycles", type=int, default=defaults.cycles, help="learning cycles (default %(default)s)"
    )
    p.add_argument(
        "--users", type=int, default=defaults.users, help="training users (default %(default)s)"
    )
    p.add_argument(
        "--held-out",
        type=int,
        default=defaults.held_out,
        help="held-out users, measured but never learned from (default %(default)s)",
    )
    p.add_argument(
        "--trial",
        action="append",
        type=float,
        metavar="ACCURACY",
        help="also run each world with every proposal tried before review, its simulated judge"
        " right ACCURACY of the time (0 to 1; repeat for more; see docs/LEARNING.md)",
    )
    p.add_argument(
        "--trial-turns",
        type=int,
        default=defaults.trial_turns,
        help="rated turns a trial tries per side (default %(default)s)",
    )
    p.add_argument(
        "--jobs", type=int, default=default_jobs(), help="worker processes (default %(default)s)"
    )
    p.add_argument(
        "--out", type=Path, default=Path("docs"), help="where to write the report and the chart"
    )
    p.add_argument(
        "--real-model",
        action="store_true",
        help="one run of the default world with the model at LLM_BASE_URL / LLM_MODEL"
        " (LLM_API_KEY): what it proposes and how screening treats it",
    )
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    return p


def real_model() -> RealModel:
    """The endpoint from the environment, or exit with what is missing."""
    base_url, model = os.environ.get("LLM_BASE_URL"), os.environ.get("LLM_MODEL")
    if not base_url or not model:
        sys.exit("--real-model needs LLM_BASE_URL and LLM_MODEL in the environment")
    return RealModel(base_url.rstrip("/"), model, os.environ.get("LLM_API_KEY") or None)


def command(args: argparse.Namespace) -> str:
    """The command that reproduces a run."""
    defaults = Config()
    parts = ["python -m eval", f"--seeds {args.seeds}"]
    for world in args.world or ():
        parts.append(f"--world {world!r}" if " " in world else f"--world {world}")
    parts += [f"--bank {bank}" for bank in args.bank or ()]
    parts += [f"--trial {accuracy:g}" for accuracy in args.trial or ()]
    for flag, value, default in (
        ("--cycles", args.cycles, defaults.cycles),
        ("--users", args.users, defaults.users),
        ("--held-out", args.held_out, defaults.held_out),
        ("--trial-turns", args.trial_turns, defaults.trial_turns),
    ):
        if value != default:
            parts.append(f"{flag} {value}")
    return " ".join(parts)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if min(args.seeds, args.cycles, args.users, args.held_out, args.jobs, args.trial_turns) < 1:
        sys.exit(
            "--seeds, --cycles, --users, --held-out, --trial-turns and --jobs must be at least 1"
        )
    if any(not 0 <= accuracy <= 1 for accuracy in args.trial or ()):
        sys.exit("--trial takes the judge's accuracy, from 0 to 1")
    setup_logging("WARNING")
    # The fakes listen on 127.0.0.1; a proxy from the environment must not sit in between.
    for name in ("NO_PROXY", "no_proxy"):
        bypass = [h for h in os.environ.get(name, "").split(",") if h]
        os.environ[name] = ",".join([*bypass, "127.0.0.1", "localhost"])
    base = Config(
        cycles=args.cycles, users=args.users, held_out=args.held_out, trial_turns=args.trial_turns
    )
    progress = None if args.quiet else (lambda line: print(line, file=sys.stderr))
    started = time.monotonic()
    if args.real_model:
        return real_run(replace(base, real_model=real_model()), args.out)
    worlds = [w for w in WORLDS if not args.world or w.name in args.world]
    if worlds[0].name != "default":
        worlds = [WORLDS[0], *worlds]  # the detailed run and the chart are the default world's
    # Each world beside its own runs with a trial before review, one per judge accuracy.
    worlds = [t for w in worlds for t in (w, *(w.with_trial(a) for a in args.trial or ()))]
    # The held-out bank leads whenever it runs: the headline is its figure.
    banks = [b for b in BANKS if not args.bank or b in args.bank]
    try:
        suite = run_suite(
            base, range(1, args.seeds + 1), worlds, banks, jobs=args.jobs, progress=progress
        )
    except (RuntimeError, TimeoutError) as exc:
        why = str(exc) or "the gateway did not finish its work in time"
        print(f"evaluation failed: {why}", file=sys.stderr)
        return 1
    write(suite, args.out, command(args))
    for w in suite.worlds:
        after = w.spread(lambda r: r.after.pleased_rate)
        print(
            f"{w.world.name}, {w.bank} bank: every preference met after {base.cycles} cycles,"
            f" median {after.median:.0%} ({after.low:.0%} to {after.high:.0%})"
        )
    print(f"wrote {args.out / REPORT} and {args.out / CHART} in {time.monotonic() - started:.0f} s")
    return 0


def write(suite: Suite, out: Path, how: str) -> None:
    """The report and the chart (of the headline's default world, first seed) side by side."""
    out.mkdir(parents=True, exist_ok=True)
    (out / CHART).write_text(render_chart(suite.headline[0].runs[0]), encoding="utf-8")
    (out / REPORT).write_text(render_report(suite, how, CHART), encoding="utf-8")


def real_run(config: Config, out: Path) -> int:
    """One run against a real model: its proposals and how screening treated them, as data."""
    from eval.realrun import render as render_real

    try:
        result = asyncio.run(Simulation(config).run())
    except (RuntimeError, TimeoutError) as exc:
        print(f"evaluation failed: {exc or 'the gateway did not finish its work in time'}")
        return 1
    out.mkdir(parents=True, exist_ok=True)
    (out / REAL_REPORT).write_text(render_real(result), encoding="utf-8")
    print(f"wrote {out / REAL_REPORT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
