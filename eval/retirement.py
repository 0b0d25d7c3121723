"""`python -m eval.retirement`: how much evidence the retirement verdict needs, over seeded runs.

A skill loaded on every answer (the hardest case: its only comparison is what the holdout
withholds) goes through the gateway's own rule, answer by answer: withheld at
`SKILLGATE_SKILL_HOLDOUT_START` while its comparison lags, else at `SKILLGATE_SKILL_HOLDOUT`,
never once settled; each answer is rated with the given share; users rate 👍 with one
probability when the skill shaped the answer and another when it was withheld; the verdict
(`gateway/skills/effect.py`, `verdict.py`) is checked after every rated answer, as if a
synthesis pass ran after each. A run ends at a *harmful* verdict (a retirement would be
proposed), when the skill settles otherwise (the holdout ends: no retirement will come), or
at the horizon. Every draw comes from the seed: the same command gives the same table.
"""

from __future__ import annotations

import argparse
import math
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass

from gateway.skills.effect import (
    EffectThresholds,
    SkillTallies,
    Tally,
    is_settled,
    measure,
    short_of_comparison,
)

BASE_RATE = 0.75
HARMS = (0.10, 0.50, 0.60)
SHARES = (0.85, 0.20)
HOLDOUT, HOLDOUT_START = 0.1, 0.5  # the settings' defaults


@dataclass(frozen=True)
class Run:
    """One seeded run: the rated answers and all answers when it was retired, else None."""

    rated: int | None
    answers: int | None


def one_run(
    p_with: float,
    p_without: float,
    seed: int,
    *,
    rated_share: float,
    horizon: int,
    rule: EffectThresholds,
) -> Run:
    """Answers eligible for the skill until it is judged harmful, settles, or `horizon` rated."""
    rng = random.Random(seed)
    tallies = SkillTallies(name="s", content_hash="h")
    effect = measure(tallies, rule)
    rated = answers = 0
    while rated < horizon:
        share = HOLDOUT_START if short_of_comparison({"s": effect}, rule) else HOLDOUT
        withheld = rng.random() < share
        answers += 1
        if rng.random() >= rated_share:
            continue
        rated += 1
        up = rng.random() < (p_without if withheld else p_with)
        bump = Tally(answers=1, up=int(up), down=int(not up))
        arm = "withheld" if withheld else "loaded"
        tallies = tallies.model_copy(update={arm: getattr(tallies, arm) + bump})
        effect = measure(tallies, rule)
        if effect.verdict == "harmful":
            return Run(rated, answers)
        if is_settled(effect, rule):
            break
    return Run(None, None)


@dataclass(frozen=True)
class Row:
    """The runs of one case: how many were retired and how soon."""

    p_with: float
    p_without: float
    rated_share: float
    runs: int
    retired: int
    rated: tuple[float, float]
    """Median and 90th percentile of rated answers to the verdict (inf: not within the horizon)."""
    answers: tuple[float, float]
    """The same in answers, rated or not: the traffic it takes."""


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank percentile (`q` in 0-1) of the values."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def case(p_with: float, p_without: float, rated_share: float, seeds: int, horizon: int) -> Row:
    runs = [
        one_run(
            p_with, p_without, s, rated_share=rated_share, horizon=horizon, rule=EffectThresholds()
        )
        for s in range(seeds)
    ]
    rated = [math.inf if r.rated is None else float(r.rated) for r in runs]
    answers = [math.inf if r.answers is None else float(r.answers) for r in runs]
    return Row(
        p_with,
        p_without,
        rated_share,
        len(runs),
        sum(r.rated is not None for r in runs),
        (percentile(rated, 0.5), percentile(rated, 0.9)),
        (percentile(answers, 0.5), percentile(answers, 0.9)),
    )


def simulate(seeds: int, horizon: int, harms: Sequence[float] = HARMS) -> list[Row]:
    """Every harm at every rated share, then the neutral skill (false alarms) at each share."""
    rows = [case(p, BASE_RATE, share, seeds, horizon) for share in SHARES for p in harms]
    return rows + [case(BASE_RATE, BASE_RATE, share, seeds, horizon) for share in SHARES]


def _count(value: float, horizon: int) -> str:
    return f"> {horizon} rated" if math.isinf(value) else f"{value:.0f}"


def render(rows: Sequence[Row], horizon: int) -> str:
    """A Markdown table: rated answers and answers to a verdict, then the false alarms."""
    lines = [
        "| 👍 with it / without | rated | retired | rated answers: median | 90th pct"
        " | answers: median | 90th pct |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        if r.p_with == r.p_without:
            continue
        lines.append(
            f"| {r.p_with:.0%} / {r.p_without:.0%} | {r.rated_share:.0%} | {r.retired} of "
            f"{r.runs} | {_count(r.rated[0], horizon)} | {_count(r.rated[1], horizon)} | "
            f"{_count(r.answers[0], horizon)} | {_count(r.answers[1], horizon)} |"
        )
    for r in rows:
        if r.p_with == r.p_without:
            lines.append(
                f"\nFalse alarms, a neutral skill ({r.p_with:.0%} / {r.p_without:.0%}, "
                f"{r.rated_share:.0%} rated): {r.retired} of {r.runs} runs "
                f"({r.retired / r.runs:.1%})."
            )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m eval.retirement", description=__doc__)
    p.add_argument("--seeds", type=int, default=300, help="seeded runs per case (default 300)")
    p.add_argument(
        "--horizon", type=int, default=1000, help="rated answers a run may take (default 1000)"
    )
    args = p.parse_args(argv)
    started = time.monotonic()
    rows = simulate(args.seeds, args.horizon)
    print(render(rows, args.horizon), end="")
    print(f"\n{args.seeds} seeds, horizon {args.horizon}, {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
