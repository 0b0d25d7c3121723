"""Is a proposal a claim already made? Compared with rejections, pending proposals and live skills.

The same text (body hash), or for two updates of one skill the same change (difflib), is a
repeat at once. Anything else is one question to the model (see `judge`): does the
candidate state the same claim as any of the few known claims most like it (see
`ranking`), a known claim under the candidate's own name always among them? A name is
only a label: sharing one decides nothing by itself (a different claim under a taken name
is renamed by `screening`). Only the model's answer decides, and only once the model has
shown it can judge (see `calibration`): a model unable to judge is not asked, and the
candidate goes to a person marked as possibly the same as the nearest known claims
(`undecided`). When no answer can be had, the candidate is held back (`held`), never
passed unchecked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from gateway.core.embeddings import Embedder
from gateway.core.llm import LLM
from gateway.core.similarity import normalise, similar
from gateway.review.proposals import Claim
from gateway.synthesis.calibration import Calibration, Calibrator, Pair, Unreachable
from gateway.synthesis.judge import SAME_CLAIM, Unanswered, ask
from gateway.synthesis.ranking import Against, Known, Ranked, rank

__all__ = ["Against", "Decision", "Known", "SameClaim", "SameClaimConfig"]
Outcome = Literal["same", "different", "held", "undecided"]


@dataclass(frozen=True)
class Decision:
    """What the check decided, what it compared the candidate with, and why."""

    outcome: Outcome
    compared: tuple[Known, ...]
    detail: str
    known: Known | None = None
    """The known claim the candidate repeats (outcome `same`)."""


@dataclass(frozen=True)
class SameClaimConfig:
    """The difflib threshold of the plain rules, and how many known claims the model sees."""

    threshold: float = 0.85
    comparands: int = 4


class SameClaim:
    """Finds the known claim a candidate repeats, with the reason in words."""

    def __init__(
        self,
        config: SameClaimConfig,
        *,
        embedder: Embedder | None = None,
        judge: LLM | None = None,
        calibrator: Calibrator[Pair] | None = None,
    ) -> None:
        self.config = config
        self.embedder = embedder
        self.judge = judge
        self.calibrator = calibrator
        """Whether the judge can judge (None: it is trusted untried, as in unit tests)."""

    async def ability(self) -> Calibration | None:
        """The judge's calibration (None: no judge, or none to calibrate it with).

        Unreachable when it has to be tried and cannot be asked.
        """
        if self.judge is None or self.calibrator is None:
            return None
        return await self.calibrator.result(self.judge, SAME_CLAIM)

    async def find(self, claim: Claim, known: Sequence[Known]) -> Decision | None:
        """The decision about `claim`; None when there is nothing to compare it with."""
        for k in known:
            plain = _plain(claim, k, self.config.threshold)
            if plain is not None:
                return Decision("same", (k,), plain, k)
        # Updates of different skills each have their own change: never the same claim.
        pool = [k for k in known if not _separate_updates(claim, k.claim)]
        ranked = await rank(claim, pool, self.config.comparands, self.embedder)
        ranked = with_namesakes(claim, pool, ranked, self.config.comparands)
        if not ranked:
            return None
        shown = tuple(r.known for r in ranked)
        if self.judge is None:
            return Decision("held", shown, "no model to ask whether it is the same claim")
        try:
            ability = await self.ability()
        except Unreachable as exc:
            return Decision("held", shown, f"the judge could not be calibrated: {exc}")
        if ability is not None and ability.verdict == "unable":
            detail = (
                f"possibly the same as {shown[0].label()}; the model {ability.model} cannot"
                f" judge this ({ability.summary()}): decide yourself"
            )
            return Decision("undecided", shown, detail)
        try:
            answer = await ask(self.judge, claim, shown)
        except Unanswered as exc:
            return Decision("held", shown, str(exc))
        if answer.index is None:
            return Decision("different", shown, f"the model judged it a new claim: {answer.why}")
        r = ranked[answer.index]
        detail = f"the model judged it the same claim ({r.measure} likeness {r.score:.2f}): "
        return Decision("same", shown, detail + answer.why, r.known)


def _separate_updates(a: Claim, b: Claim) -> bool:
    both = a.kind == "update" and b.kind == "update"
    return both and (a.target or a.name) != (b.target or b.name)


def with_namesakes(
    claim: Claim, pool: Sequence[Known], ranked: list[Ranked], limit: int
) -> list[Ranked]:
    """`ranked` with every known claim under the candidate's name among the first `limit`:
    a taken name is not a repeat by itself, but the model must see what holds it."""
    slug = normalise(claim.target or claim.name)
    listed = {id(r.known) for r in ranked}
    namesakes = [
        Ranked(k, 1.0, "the same name")
        for k in pool
        if id(k) not in listed and normalise(k.claim.target or k.claim.name) == slug
    ]
    if not namesakes:
        return ranked
    keep = max(limit - len(namesakes), 0)
    return [*namesakes[:limit], *ranked[:keep]]


def _plain(a: Claim, k: Known, threshold: float) -> str | None:
    """The same text, or for two updates of one skill the same change."""
    b = k.claim
    if a.content_hash == b.content_hash:
        return "the same text"
    if a.kind == "update" and b.kind == "update":
        if (a.target or a.name) != (b.target or b.name):
            return None
        if similar(a.change_text, b.change_text, threshold):
            return "the same change to the same skill"
    return None
