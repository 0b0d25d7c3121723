"""`python -m eval.retirement`: how much evidence the retirement verdict needs, over seeded runs.

Two cases, each a skill offered on every answer: one loaded on every answer it is not
withheld from (the hardest case: its only comparison is what the holdout withholds), and
one loaded on `LOADED_SHARE` of them, the rest *offered only* and rated like answers
without it, so its comparison grows faster than its own uses. Each goes through the
gateway's own rule, answer by answer: withheld at
`SKILLGATE_SKILL_HOLDOUT_START` while its comparison lags, else at `SKILLGATE_SKILL_HOLDOUT`,
never once settled; each answer is rated with the given share; users rate 👍 with one
probability when the skill shaped the answer and another when it did not; the skill is
measured after every rated answer, as if a synthesis pass ran after each, which takes the
look that has come due and records it as the store would (`gateway/skills/effect.py`,
`looks.py`). A run ends at a *harmful* verdict (a retirement would be
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
    take_look,
)

BASE_RATE = 0.75
HARMS = (0.10, 0.50, 0.60)
SHARES = (0.85, 0.20)
HOLDOUT, HOLDOUT_START = 0.1, 0.5  # the settings' defaults
LOADED_SHARE = 0.2
"""The second case: the share of answers offered the skill (not withheld) that load it."""
CASES = {"every": 1.0, "share": LOADED_SHARE}
"""Each case's loaded share, by the name `--case` takes."""


@dataclass(frozen=True)
class Run:
    """One seeded run when it was retired (else None): rated answers, the skill's own rated
    answers (those that loaded it) and all answers."""

    rated: int | None
    uses: int | None
    answers: int | None


def one_run(
    p_with: float,
    p_without: float,
    seed: int,
    *,
    rated_share: float,
    horizon: int,
    rule: EffectThresholds,
    loaded_share: float = 1.0,
) -> Run:
    """Answers eligible for the skill until it is judged harmful, settles, or `horizon` rated."""
    rng = random.Random(seed)
    tallies = SkillTallies(name="s", content_hash="h")
    effect = measure(tallies, rule)
    rated = answers = 0
    while rated < horizon:
        share = HOLDOUT_START if short_of_comparison({"s": effect}, rule) else HOLDOUT
        arm = "withheld" if rng.random() < share else "loaded"
        # No draw when every answer loads it: the first case keeps its seeds' streams.
        if arm == "loaded" and loaded_share < 1.0 and rng.random() >= loaded_share:
            arm = "offered"
        answers += 1
        if rng.random() >= rated_share:
            continue
        rated += 1
        up = rng.random() < (p_with if arm == "loaded" else p_without)
        bump = Tally(answers=1, up=int(up), down=int(not up))
        tallies = tallies.model_copy(update={arm: getattr(tallies, arm) + bump})
        effect = measure(tallies, rule)
        looked = take_look(effect, rule)
        if looked is not None:  # recorded, as the synthesizer records it
            tallies = tallies.model_copy(
                update={"looked": looked.looked, "reached": looked.reached}
            )
            effect = looked
        if effect.verdict == "harmful":
            return Run(rated, tallies.loaded.rated, answers)
        if is_settled(effect, rule):
            break
    return Run(None, None, None)


@dataclass(frozen=True)
class Row:
    """The runs of one case: how many were retired and how soon."""

    p_with: float
    p_without: float
    rated_share: float
    loaded_share: float
    runs: int
    retired: int
    rated: tuple[float, float]
    """Median and 90th percentile of rated answers to the verdict (inf: not within the horizon)."""
    uses: tuple[float, float]
    """The same in the skill's own rated answers, those that loaded it."""
    answers: tuple[float, float]
    """The same in answers, rated or not: the traffic it takes."""


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank percentile (`q` in 0-1) of the values."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def _spread(counts: Sequence[int | None]) -> tuple[float, float]:
    values = [math.inf if c is None else float(c) for c in counts]
    return percentile(values, 0.5), percentile(values, 0.9)


def case(
    p_with: float,
    p_without: float,
    rated_share: float,
    seeds: int,
    horizon: int,
    loaded_share: float = 1.0,
) -> Row:
    rule = EffectThresholds()
    runs = [
        one_run(
            p_with,
            p_without,
            s,
            rated_share=rated_share,
            horizon=horizon,
            rule=rule,
            loaded_share=loaded_share,
        )
        for s in range(seeds)
    ]
    return Row(
        p_with,
        p_without,
        rated_share,
        loaded_share,
        len(runs),
        sum(r.rated is not None for r in runs),
        _spread([r.rated for r in runs]),
        _spread([r.uses for r in runs]),
        _spread([r.answers for r in runs]),
    )


def simulate(
    seeds: int, horizon: int, harms: Sequence[float] = HARMS, loaded_share: float = 1.0
) -> list[Row]:
    """Every harm at every rated share, then the neutral skill (false alarms) at each share."""
    pairs = [(p, share) for share in SHARES for p in harms]
    pairs += [(BASE_RATE, share) for share in SHARES]
    return [case(p, BASE_RATE, share, seeds, horizon, loaded_share) for p, share in pairs]


def _count(value: float, horizon: int) -> str:
    return f"> {horizon} rated" if math.isinf(value) else f"{value:.0f}"


def _title(loaded_share: float) -> str:
    if loaded_share >= 1.0:
        return "A skill loaded on every answer it is not withheld from:"
    return (
        f"A skill loaded on {loaded_share:.0%} of the answers it is offered in, else offered only:"
    )


def render(rows: Sequence[Row], horizon: int) -> str:
    """The case, a Markdown table of rated answers and answers to a verdict, the false alarms."""
    lines = [
        _title(rows[0].loaded_share),
        "",
        "| 👍 with it / without | rated | retired | rated answers: median | 90th pct"
        " | its rated uses: median | 90th pct | answers: median | 90th pct |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        if r.p_with == r.p_without:
            continue
        lines.append(
            f"| {r.p_with:.0%} / {r.p_without:.0%} | {r.rated_share:.0%} | {r.retired} of "
            f"{r.runs} | {_count(r.rated[0], horizon)} | {_count(r.rated[1], horizon)} | "
            f"{_count(r.uses[0], horizon)} | {_count(r.uses[1], horizon)} | "
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
    p.add_argument(
        "--case", choices=[*CASES, "both"], default="both", help="which skill (default both)"
    )
    args = p.parse_args(argv)
    started = time.monotonic()
    names = list(CASES) if args.case == "both" else [args.case]
    print(
        "\n".join(
            render(simulate(args.seeds, args.horizon, loaded_share=CASES[n]), args.horizon)
            for n in names
        ),
        end="",
    )
    print(f"\n{args.seeds} seeds, horizon {args.horizon}, {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
