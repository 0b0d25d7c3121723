"""The suite as Markdown: noise-free rates and their spread per world and bank, one run in detail.

The headline is the held-out phrase bank's: the users' words there were written apart
from the model's reader of comments. The bank that reader was built beside follows
beside it, world by world, to show what that closeness is worth.
"""

from __future__ import annotations

from typing import Any

from eval.figures import CycleStats, Result
from eval.skills import BAD_KINDS
from eval.suite import (
    Spread,
    Suite,
    WorldRuns,
    noise_free_after,
    noise_free_before,
    noise_free_gain,
)
from eval.world import BANKS, PREFERENCES, SHARE
from gateway.synthesis.verdict import Verdict


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _row(cells: list[Any]) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _table(head: list[str], rows: list[list[Any]]) -> list[str]:
    return [_row(head), _row(["---"] * len(head)), *(_row(r) for r in rows)]


def cycle_rows(result: Result) -> list[list[Any]]:
    def row(s: CycleStats) -> list[Any]:
        return [
            s.cycle,
            s.answers,
            s.rated,
            _pct(s.up_rate),
            s.proposed,
            s.approved,
            s.rejected,
            s.repeats_suppressed,
            s.duplicates_avoided,
            s.reopened,
            s.refused,
            f"{s.skills_live} ({s.learned_live})",
            f"{s.index_mean:.0f} / {s.index_max}",
            f"{s.loaded_mean:.0f}",
            s.withheld,
        ]

    return [row(s) for s in result.cycles]


CYCLE_HEAD = [
    "cycle",
    "answers",
    "rated",
    "👍 rate",
    "proposals made",
    "approved",
    "rejected",
    "suppressed as repeats",
    "duplicates avoided",
    "reopened",
    "refused",
    "skills live (learned)",
    "index tokens mean / max",
    "skill body tokens mean",
    "turns with a skill withheld",
]


def _skill(s: dict[str, Any]) -> list[Any]:
    e = s.get("effect") or {}
    without = e.get("without") or {}
    return [
        f"`{s['name']}`",
        s["source"],
        "yes" if s["enabled"] else "no",
        s["review_status"],
        e.get("uses", 0),
        f"{_pct(e.get('rate'))} of {e.get('rated', 0)}",
        f"{_pct(without.get('rate'))} of {without.get('rated', 0)}",
        e.get("verdict", ""),
    ]


def _pp(value: float) -> str:
    return f"{value * 100:+.0f}"


def _span(w: WorldRuns, figure: Any, fmt: Any = _pct) -> str:
    spread = w.spread(figure)
    return f"{fmt(spread.median)} ({fmt(spread.low)} to {fmt(spread.high)})"


def headline(suite: Suite) -> list[str]:
    """The leading table: per world, the noise-free rate before and after, and its spread."""
    rows = []
    for w in suite.headline:
        runs = w.runs
        back = sum(len(r.repeats) for r in runs)
        leaked = sum(len(r.leaked) for r in runs)
        rows.append(
            [
                f"**{w.world.name}**",
                w.world.what,
                _span(w, noise_free_before),
                _span(w, noise_free_after),
                _span(w, noise_free_gain, _pp),
                _span(w, lambda r: r.after.rate),
                f"{back} / {leaked}",
                sum(len(r.reopened) for r in runs),
                sum(
                    1
                    for r in runs
                    for p in r.proposals
                    if p.kind == "retire" and p.status in ("approved", "applied")
                ),
            ]
        )
    head = [
        "world",
        "what differs",
        "meeting every preference, before",
        "after",
        "change (points)",
        "👍 after",
        "rejections back in review / repeats that got through",
        "reopened",
        "retired",
    ]
    return _table(head, rows)


def banks(suite: Suite) -> list[str]:
    """Per world, the noise-free rate after and its change with each bank, side by side."""
    head = ["world"]
    for bank in suite.banks:
        head += [f"after, {bank} bank", f"change, {bank} bank"]
    rows = []
    for n, w in enumerate(suite.headline):
        row: list[Any] = [f"**{w.world.name}**"]
        for bank in suite.banks:
            other = suite.of(bank)[n]
            row += [_span(other, noise_free_after), _span(other, noise_free_gain, _pp)]
        rows.append(row)
    return _table(head, rows)


def _met(w: WorldRuns, preference: str, moment: int) -> str:
    """A preference's met rate over the seeds where some held-out user holds it."""
    values = [rate for r in w.runs if (rate := r.held_out[moment].met_rate(preference)) is not None]
    if not values:
        return "-"
    spread = Spread(values)
    return f"{_pct(spread.median)} ({_pct(spread.low)} to {_pct(spread.high)})"


def preferences(suite: Suite) -> list[str]:
    """Per preference, in the default world: how often answers met it, before and after."""
    first = suite.headline[0]
    head = ["preference", "met, before"] + [f"after, {bank} bank" for bank in suite.banks]
    rows = [
        [PREFERENCES[p], _met(first, p, 0)] + [_met(suite.of(b)[0], p, -1) for b in suite.banks]
        for p in PREFERENCES
    ]
    return _table(head, rows)


def per_seed(suite: Suite) -> list[str]:
    rows = []
    for w in suite.worlds:
        for r in w.runs:
            decided = r.proposals
            rows.append(
                [
                    w.world.name,
                    w.bank,
                    r.config.seed,
                    _pct(r.before.pleased_rate),
                    _pct(r.after.pleased_rate),
                    _pct(r.before.rate),
                    _pct(r.after.rate),
                    len(decided),
                    sum(1 for p in decided if p.status in ("approved", "applied")),
                    sum(1 for p in decided if p.status == "rejected"),
                    sum(s.repeats_suppressed for s in r.cycles),
                    sum(s.duplicates_avoided for s in r.cycles),
                    len(r.reopened),
                    ", ".join(f"`{p.name}`" for p in decided if p.slip) or "-",
                    f"{r.seconds:.0f}",
                ]
            )
    head = [
        "world",
        "bank",
        "seed",
        "every preference met, before",
        "after",
        "👍 before",
        "after",
        "proposals",
        "approved",
        "rejected",
        "repeats of rejections suppressed",
        "duplicates suppressed",
        "reopened",
        "reviewer's errors that stood",
        "seconds",
    ]
    return _table(head, rows)


def detail(result: Result, chart: str) -> list[str]:
    """One run cycle by cycle: the default world's first seed."""
    return [
        f"![👍 rate per cycle]({chart})",
        "",
        "Each cycle: the gateway starts on the previous cycle's data dir, the training users"
        " ask, rate and comment, one synthesis pass runs, the reviewer takes a second look at"
        " rejections a pass found repeated, decides every card, and the gateway stops."
        " *Index tokens* are the estimated tokens of the skill index in the system prompt,"
        " *skill body tokens* those of the skills loaded with `load_skill`, both per turn.",
        "",
        *_table(CYCLE_HEAD, cycle_rows(result)),
        "",
        "Every proposal that reached review:",
        "",
        *_table(
            ["#", "cycle", "kind", "skill", "decision", "reason given"],
            [
                [
                    p.id,
                    p.cycle,
                    p.kind,
                    f"`{p.name}`",
                    p.status + (" (reviewer's error)" if p.slip else ""),
                    p.reason or "",
                ]
                for p in result.proposals
            ],
        ),
        "",
        "Skills at the end (`GET /admin/api/skills`, each skill's current text):",
        "",
        *_table(
            ["skill", "source", "enabled", "status", "uses", "👍 rate", "without it", "verdict"],
            [_skill(s) for s in result.skills],
        ),
    ]


def settings(suite: Suite) -> list[str]:
    c = suite.base
    shares = ", ".join(f"{PREFERENCES[p]} {SHARE[p]:.0%}" for p in PREFERENCES)
    return [
        f"- seeds {', '.join(str(s) for s in suite.seeds)}; {c.cycles} cycles; by default"
        f" {c.users} training users asking {c.questions} questions per cycle; {c.held_out}"
        f" held-out users asking the same {c.held_out_questions} questions before the first"
        " cycle and after the last (their turns skip the skill holdout).",
        f"- preferences (share of users): {shares}; nobody holds both of the last two.",
        f"- by default users rate {c.habits.rate:.0%} of answers, press the other button"
        f" {c.habits.noise:.0%} of the time, and explain {c.habits.comment:.0%} of their 👎"
        " in words from a phrase bank: "
        + "; ".join(f"*{b}*, {BANKS[b].what}" for b in suite.banks)
        + ".",
        f"- scripted model's share of poor proposals, repeats and copies: {c.bad_share:g} per"
        " batch by default.",
        f"- `SKILLGATE_SKILL_HOLDOUT` = {c.skill_holdout:g}, `SKILLGATE_SKILL_INDEX_TOKENS` ="
        f" {c.index_budget}, `SKILLGATE_MAX_PROPOSALS_PER_RUN` = {c.max_proposals}, every other"
        " setting at its default (no `LLM_EMBEDDING_MODEL`: repeats are recognised by words and"
        " the model's answer to close calls); sessions finish at once"
        " (`SKILLGATE_SESSION_IDLE_MINUTES` = 0).",
        f"- {sum(len(w.runs) for w in suite.worlds)} runs in {suite.seconds:.0f} s with"
        f" {suite.jobs} worker process(es).",
    ]


def _comparison(suite: Suite) -> list[str]:
    """The banks side by side, when more than one ran."""
    if len(suite.banks) < 2:
        return []
    gains = ", ".join(
        f"{_span(suite.of(b)[0], noise_free_gain, _pp)} with the {b} bank" for b in suite.banks
    )
    return [
        "## Two phrase banks",
        "",
        "The same worlds, seeds, users and questions, with the users' 👎 comments drawn from"
        " each bank: "
        + "; ".join(f"*{b}*, {BANKS[b].what}" for b in suite.banks)
        + ". Each bank words the same five preferences in six phrases each, so a seed draws the"
        " same ratings with either until the answers differ. The gap between them is how much"
        " the reader's closeness to its own bank flatters the figures.",
        "",
        *banks(suite),
        "",
        f"- Default world, change in points (median, lowest to highest): {gains}.",
        "",
        "Each preference in the default world: of the held-out answers to users who hold it"
        " (units only where the answer states a measurement), the share that met it (median"
        " over the seeds, lowest to highest).",
        "",
        *preferences(suite),
        "",
    ]


BAD = tuple(sorted(set(BAD_KINDS.values()), key=("password", "US units", "vague").index))
"""The kinds of bad proposal, in the order the report gives them."""


def _bad(w: WorldRuns, kind: str) -> str:
    """Bad proposals of a kind that ended approved, of those that reached review (all seeds)."""
    approved = sum(r.bad_approved(kind) for r in w.runs)
    return f"{approved} of {sum(r.bad_reviewed(kind) for r in w.runs)}"


def trial_rows(suite: Suite) -> list[str]:
    """Per world that ran with a trial: without it and with each judge, side by side."""
    runs = suite.headline
    rows = []
    for base in (w for w in runs if not w.world.base):
        tried = [w for w in runs if w.world.base == base.world.name]
        if not tried:
            continue
        for w in (base, *tried):
            judge = w.world.judge
            verdicts = [t.verdict for r in w.runs for t in r.trials]
            rows.append(
                [
                    f"**{base.world.name}**",
                    "no trial" if judge is None else f"judge right {judge:.0%}",
                    _span(w, noise_free_after),
                    _span(w, noise_free_gain, _pp),
                    sum(
                        1
                        for r in w.runs
                        for p in r.proposals
                        if p.kind != "retire" and p.status in ("approved", "applied")
                    ),
                    *(_bad(w, kind) for kind in BAD),
                    sum(bool(r.asking_password) for r in w.runs),
                    "-" if judge is None else " / ".join(str(verdicts.count(v)) for v in Verdict),
                ]
            )
    head = [
        "world",
        "trial",
        "meeting every preference, after",
        "change (points)",
        "approved",
        *(f"{kind} approved (of reviewed)" for kind in BAD),
        "seeds ending with a skill live that asks for the password",
        "trials: " + " / ".join(v.value.replace("_", " ") for v in Verdict),
    ]
    return _table(head, rows) if rows else []


def _trial(suite: Suite) -> list[str]:
    """The trial's section, when some world ran with one."""
    table = trial_rows(suite)
    if not table:
        return []
    return [
        "## The trial before review (simulated judge)",
        "",
        "Each world beside the same world, seeds and bank with every proposal (not a"
        " retirement) tried before review on the training users' rated turns: what it claims to"
        " fix (the 👎 turns of the sessions it was drawn from) and what it might break (other"
        f" rated turns on which the prompt would offer it), up to {suite.base.trial_turns} a"
        " side, answered with it and without it. **The judge is simulated**: it knows each"
        " simulated user's real preferences and states which answer serves them better right"
        " the share of the time given, else a wrong verdict drawn from the seed. The counts go"
        " to the gateway's rule (`gateway.synthesis.verdict.decide`); the reviewer approves"
        " only a measured gain, and misreads texts at its usual rates. *Bad* proposals are the"
        " model's own poor ideas and their repeats: asking for the password, US units, vague."
        " A skill written from users' complaints about being asked for a password can make the"
        " model ask for it too (its body quotes them): the column of seeds ending with a"
        " password-asking skill live counts every skill the model reads so. Counts are summed"
        " over the seeds.",
        "",
        *table,
        "",
    ]


def render(suite: Suite, command: str, chart: str) -> str:
    """The whole report."""
    default = suite.headline[0]
    first = default.runs[0]
    gain = default.spread(noise_free_gain)
    lines = [
        "# Does the loop learn? Evaluation report",
        "",
        f"Generated by `{command}` from a checkout of the repository; the same command gives"
        " the same numbers (apart from the seconds each run took). How the simulation works and"
        " what it cannot show:"
        " [LEARNING.md](LEARNING.md).",
        "",
        "## Summary",
        "",
        "The figure that leads is *noise-free*: the share of the held-out users' answers that"
        " met every preference of the user who asked, before the first cycle and after the"
        f" last, for each of {len(suite.seeds)} seeds (median, and lowest to highest). The held-"
        "out users never rate, so nothing they say is learned from. *👍* is the rate they would"
        f" press, with the users' 10% noise. The training users' 👎 comments come from the"
        f" *{default.bank}* phrase bank ({BANKS[default.bank].what}).",
        "",
        *headline(suite),
        "",
        f"- In the default world, with the {default.bank} bank, the noise-free rate changes by"
        f" {_pp(gain.median)} points (median; {_pp(gain.low)} to {_pp(gain.high)} over the"
        " seeds).",
        "- *Rejections back in review* is counted after each run from the admin API's records:"
        " a proposal made after a rejection with the same body hash or the same normalised name"
        " and description (a reopened rejection no longer counts). *Repeats that got through*"
        " are the model's own repeats and copies (it knows which they were) that reached review"
        " anyway, reworded or renamed past the gateway's comparison.",
        "",
        *_comparison(suite),
        *_trial(suite),
        "## Every run",
        "",
        *per_seed(suite),
        "",
        f"## One run in detail: {default.world.name} world, {default.bank} bank, seed"
        f" {first.config.seed}",
        "",
        *detail(first, chart),
        "",
        "## Settings",
        "",
        *settings(suite),
        "",
    ]
    return "\n".join(lines)
