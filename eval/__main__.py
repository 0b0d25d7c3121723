"""`python -m eval`: run the learning-loop evaluation and write its report and chart.

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
from pathlib import Path

from eval.chart import render as render_chart
from eval.config import Config, RealModel
from eval.figures import Result
from eval.report import render as render_report
from eval.simulation import Simulation
from gateway.logs import setup_logging

REPORT = "LEARNING-REPORT.md"
CHART = "learning-chart.svg"


def parser() -> argparse.ArgumentParser:
    defaults = Config()
    p = argparse.ArgumentParser(
        prog="python -m eval",
        description=(
            "Simulate users, a model and a reviewer around the real gateway for a number of"
            " learning cycles, then write a Markdown report and an SVG chart."
        ),
    )
    p.add_argument(
        "--seed", type=int, default=defaults.seed, help="random seed (default %(default)s)"
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
        "--questions",
        type=int,
        default=defaults.questions,
        help="questions per training user per cycle (default %(default)s)",
    )
    p.add_argument(
        "--reviewer-slips",
        type=int,
        default=defaults.reviewer_slips,
        help="proposals against users' wishes the reviewer wrongly approves (default %(default)s)",
    )
    p.add_argument(
        "--bad-share",
        type=float,
        default=defaults.bad_share,
        help="chance per batch of each kind of poor proposal (default %(default)s)",
    )
    p.add_argument(
        "--out", type=Path, default=Path("docs"), help="where to write the report and the chart"
    )
    p.add_argument(
        "--data-dir",
        type=Path,
        help="keep the gateway's data here (an empty or new folder) to inspect it afterwards",
    )
    p.add_argument(
        "--real-model",
        action="store_true",
        help="answer and synthesize with the model at LLM_BASE_URL / LLM_MODEL (LLM_API_KEY)",
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
    parts = ["python -m eval", f"--seed {args.seed}", f"--cycles {args.cycles}"]
    parts += [f"--users {args.users}", f"--held-out {args.held_out}"]
    defaults = Config()
    if args.questions != defaults.questions:
        parts.append(f"--questions {args.questions}")
    if args.reviewer_slips != defaults.reviewer_slips:
        parts.append(f"--reviewer-slips {args.reviewer_slips}")
    if args.bad_share != defaults.bad_share:
        parts.append(f"--bad-share {args.bad_share:g}")
    if args.real_model:
        parts.append("--real-model")
    return " ".join(parts)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if min(args.cycles, args.users, args.held_out, args.questions) < 1:
        sys.exit("--cycles, --users, --held-out and --questions must be at least 1")
    if args.reviewer_slips < 0 or not 0 <= args.bad_share <= 1:
        sys.exit("--reviewer-slips must be 0 or more and --bad-share between 0 and 1")
    if args.data_dir is not None and args.data_dir.exists() and any(args.data_dir.iterdir()):
        sys.exit(f"--data-dir {args.data_dir} is not empty")
    setup_logging("WARNING")
    # The fakes listen on 127.0.0.1; a proxy from the environment must not sit in between.
    for name in ("NO_PROXY", "no_proxy"):
        bypass = [h for h in os.environ.get(name, "").split(",") if h]
        os.environ[name] = ",".join([*bypass, "127.0.0.1", "localhost"])
    config = Config(
        seed=args.seed,
        cycles=args.cycles,
        users=args.users,
        held_out=args.held_out,
        questions=args.questions,
        reviewer_slips=args.reviewer_slips,
        bad_share=args.bad_share,
        real_model=real_model() if args.real_model else None,
    )
    progress = None if args.quiet else (lambda line: print(line, file=sys.stderr))
    started = time.monotonic()
    try:
        result = asyncio.run(Simulation(config, progress).run(args.data_dir))
    except (RuntimeError, TimeoutError) as exc:
        why = str(exc) or "the gateway did not finish its work in time"
        print(f"evaluation failed: {why}", file=sys.stderr)
        return 1
    write(result, args.out, command(args))
    print(f"held-out 👍 rate: {result.before.rate:.0%} before, {result.after.rate:.0%} after")
    print(f"re-proposals of rejected content: {len(result.repeats)}")
    print(f"skill index: at most {result.index_max} tokens (budget {config.index_budget})")
    print(f"wrote {args.out / REPORT} and {args.out / CHART} in {time.monotonic() - started:.0f} s")
    return 0


def write(result: Result, out: Path, how: str) -> None:
    """The report and the chart, side by side in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    (out / CHART).write_text(render_chart(result), encoding="utf-8")
    (out / REPORT).write_text(render_report(result, how, CHART), encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
