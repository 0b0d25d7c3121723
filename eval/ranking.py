"""`python -m eval.ranking`: how many repeats the same-claim check catches, and whether it
suppresses a different claim, when its judge is right and every rejection is known at once.

The set (eval/data/ranking_pairs.json, kept apart from the tests' pairs and from the
calibration set) holds pairs of an ORIGINAL claim and a NEW one: half repeats (reworded,
renamed, reordered, translated between English, Japanese, Traditional Chinese and Thai),
half a different claim on a nearby topic, some under the original's very name. Every
original is rejected at once; each new claim is then screened and checked as a synthesis
pass does (`screening.screen`, `repeat_of`, `renamed`) with a judge scripted from the
set's labels: it names the original when the original is among the claims it is shown,
else answers 0. What is missed is then the ranking's doing (the original was not shown),
and what is suppressed the plain rules'. Run once with the canonical statements and once
without, to show what they add.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from gateway.core.llm_wire import Completion
from gateway.review.proposals import Rejection
from gateway.synthesis.answer import ProposalDraft
from gateway.synthesis.sameness import SameClaim, SameClaimConfig
from gateway.synthesis.screening import Dropped, ScreenContext, renamed, repeat_of, screen
from gateway.synthesis.similarity import body_hash, change_text

SET = Path(__file__).parent / "data" / "ranking_pairs.json"
_NAME = re.compile(r"^name: ([a-z0-9-]+)", re.MULTILINE)


class Side(BaseModel):
    """One claim of a pair, as the synthesis model would have written it."""

    name: str
    description: str
    body: str
    statement: str


class Pair(BaseModel):
    """An original (rejected) claim and a new one; `same` when the new one repeats it."""

    id: str
    how: str
    same: bool
    original: Side
    new: Side


def load(path: Path = SET) -> list[Pair]:
    """The pairs of the set."""
    return [Pair.model_validate(p) for p in json.loads(path.read_text("utf-8"))["pairs"]]


class ScriptedJudge:
    """A correct judge: names `original` when it was shown, else answers 0."""

    def __init__(self, original: str | None) -> None:
        self.model: str | None = "scripted"
        self.original = original
        self.questions = 0
        self.shown_original = False

    async def complete(self, messages: list[dict[str, Any]], **_: Any) -> Completion:
        self.questions += 1
        names = _NAME.findall(str(messages[-1]["content"]))
        known = names[:-1]  # the last one is the new claim
        index = 0
        if self.original is not None and self.original in known:
            self.shown_original = True
            index = known.index(self.original) + 1
        why = "it restates the original" if index else "a different instruction"
        return Completion(text=json.dumps({"same_as": index, "why": why}))

    async def ping(self) -> str:
        return "scripted"

    async def close(self) -> None:
        return None


@dataclass
class Figures:
    """What the check did with the set."""

    statements: bool
    repeats: int = 0
    caught: int = 0
    different: int = 0
    suppressed: int = 0
    renamed: int = 0
    questions: int = 0
    missed: list[str] = field(default_factory=list)
    """Repeats not caught: `id (how)`."""
    wrongly: list[str] = field(default_factory=list)
    """Different claims suppressed: `id (how): reason`."""

    @property
    def caught_share(self) -> float:
        return self.caught / self.repeats if self.repeats else 1.0

    def lines(self) -> list[str]:
        head = "with statements" if self.statements else "without statements"
        out = [
            f"{head}: {self.caught} of {self.repeats} repeats caught"
            f" ({100 * self.caught_share:.0f} %), {self.suppressed} of {self.different}"
            f" different claims suppressed, {self.renamed} renamed from a taken name,"
            f" {self.questions} questions to the judge",
        ]
        out += [f"  missed: {m}" for m in self.missed]
        out += [f"  suppressed: {w}" for w in self.wrongly]
        return out


def _rejection(i: int, side: Side, statements: bool) -> Rejection:
    return Rejection(
        proposal_id=i,
        kind="create",
        name=side.name,
        description=side.description,
        content_hash=body_hash(side.body),
        change_text=change_text(None, side.body),
        statement=side.statement if statements else None,
        reason="not wanted",
        rejected_at=0.0,
    )


def _context(rejections: list[Rejection], judge: ScriptedJudge) -> ScreenContext:
    return ScreenContext(
        shown=[1],
        live=lambda _slug: None,
        pending=[],
        rejections=rejections,
        threshold=0.85,
        max_bytes=16_000,
        secrets=(),
        model="scripted",
        now=0.0,
        same=SameClaim(SameClaimConfig(), judge=judge),
    )


async def measure(pairs: list[Pair], *, statements: bool = True) -> Figures:
    """Screen and check every new claim against every original rejected at once."""
    rejections = [_rejection(i, p.original, statements) for i, p in enumerate(pairs, 1)]
    figures = Figures(statements=statements)
    for i, pair in enumerate(pairs, 1):
        judge = ScriptedJudge(pair.original.name if pair.same else None)
        ctx = _context(rejections, judge)
        new = pair.new
        draft = ProposalDraft(
            kind="create",
            name=new.name,
            description=new.description,
            content=new.body,
            statement=new.statement if statements else "",
        )
        candidate = screen(draft, ctx)
        if isinstance(candidate, Dropped):
            raise ValueError(f"{pair.id}: refused by a rule: {candidate.reason}")
        repeat, decision = await repeat_of(candidate, ctx)
        figures.questions += judge.questions
        if pair.same:
            figures.repeats += 1
            if repeat is not None and repeat.matched == i:
                figures.caught += 1
            else:
                shown = "shown" if judge.shown_original else "not shown"
                figures.missed.append(f"{pair.id} ({pair.how}; original {shown})")
            continue
        figures.different += 1
        if repeat is not None:
            figures.suppressed += 1
            how = decision.detail if decision else repeat.detail
            figures.wrongly.append(f"{pair.id} ({pair.how}): {repeat.reason}; {how}")
            continue
        after, _ = renamed(candidate, ctx)
        figures.renamed += after.name != candidate.name
    return figures


async def _main(path: Path) -> int:
    pairs = load(path)
    for statements in (True, False):
        print("\n".join((await measure(pairs, statements=statements)).lines()))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.ranking", description=__doc__)
    parser.add_argument("--set", type=Path, default=SET, help="the pairs (JSON)")
    args = parser.parse_args(argv)
    return asyncio.run(_main(args.set))


if __name__ == "__main__":
    sys.exit(main())
