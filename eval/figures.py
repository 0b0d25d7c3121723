"""What a run measured: per cycle, per held-out measurement, per proposal; and the audit after it.

The check that no rejected proposal came back is done here, from the admin
API's records, independently of the gateway's own screening: a proposal
repeats a rejection when it was made in a later cycle and its body hash is the
same, or (for two new skills) its name and description are the same once
lower-cased, stripped of punctuation and whitespace-collapsed.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from eval.answers import style_of
from eval.config import Config
from eval.rig import TurnCost
from eval.skills import BAD_KINDS

if TYPE_CHECKING:
    from eval.model import ScriptedModel
    from eval.reviewer import ScriptedReviewer
    from eval.rig import Gateway
    from eval.trial import Trial


def _mean(values: list[int]) -> float:
    return sum(values) / len(values) if values else 0.0


def _rate(part: int, whole: int) -> float | None:
    return part / whole if whole else None


@dataclass
class CycleStats:
    """One cycle: its conversations, its synthesis pass, the review, the skills afterwards."""

    cycle: int
    answers: int = 0
    up: int = 0
    down: int = 0
    comments: int = 0
    errors: int = 0
    proposed: int = 0
    approved: int = 0
    rejected: int = 0
    repeats_suppressed: int = 0
    retirements_repeated: int = 0
    """Of those, retirements the measurement proposed again after one was refused."""
    duplicates_avoided: int = 0
    refused: int = 0
    retirements: int = 0
    reopened: int = 0
    """Rejections the reviewer reopened after a second look."""
    skills_live: int = 0
    learned_live: int = 0
    synthesis_error: str | None = None
    emitted: tuple[int, int] = (0, 0)
    """The slice of the scripted model's proposals made in this cycle's pass."""
    tried: Counter[str] = field(default_factory=Counter)
    """The scripted model's proposals of this pass by flavour (see `model.Emitted`)."""
    costs: list[TurnCost] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    """The synthesis pass's answer (`POST /admin/api/synthesize`)."""

    @property
    def rated(self) -> int:
        return self.up + self.down

    @property
    def up_rate(self) -> float | None:
        return _rate(self.up, self.rated)

    @property
    def index_mean(self) -> float:
        return _mean([c.index_tokens for c in self.costs])

    @property
    def index_max(self) -> int:
        return max((c.index_tokens for c in self.costs), default=0)

    @property
    def loaded_mean(self) -> float:
        return _mean([c.loaded_tokens for c in self.costs])

    @property
    def withheld(self) -> int:
        return sum(1 for c in self.costs if c.withheld)

    def line(self) -> str:
        """One progress line."""
        rate = "-" if self.up_rate is None else f"{self.up_rate:.0%}"
        return (
            f"cycle {self.cycle}: 👍 {rate} of {self.rated} rated; proposals {self.proposed}"
            f" (approved {self.approved}, rejected {self.rejected}); suppressed as repeats"
            f" {self.repeats_suppressed}; learned skills live {self.learned_live}"
        )


@dataclass
class HeldOut:
    """The held-out users' verdicts on the answers they got after `after` cycles of learning."""

    after: int
    answers: int = 0
    up: int = 0
    """Answers they would rate 👍 (with the same noise as everyone's ratings)."""
    pleased: int = 0
    """Answers that met every preference of the user who asked (no noise)."""
    held: Counter[str] = field(default_factory=Counter)
    """Per preference: answers to users who hold it, where it matters (units: measurements)."""
    met: Counter[str] = field(default_factory=Counter)
    """Of those, the answers that met it."""

    def met_rate(self, preference: str) -> float | None:
        """The share of answers that met one preference, of those where it mattered."""
        return _rate(self.met[preference], self.held[preference])

    @property
    def rate(self) -> float:
        return self.up / self.answers if self.answers else 0.0

    @property
    def pleased_rate(self) -> float:
        return self.pleased / self.answers if self.answers else 0.0


@dataclass(frozen=True)
class ProposalRow:
    """One proposal as the admin API keeps it, with the cycle whose pass made it."""

    id: int
    cycle: int
    kind: str
    name: str
    description: str
    status: str
    reason: str | None
    content_hash: str
    slip: bool = False
    """Approved by the reviewer's mistake."""

    @property
    def key(self) -> str:
        return f"{normalise(self.name)}|{normalise(self.description)}"


@dataclass
class Result:
    """A whole run."""

    config: Config
    model: str
    cycles: list[CycleStats] = field(default_factory=list)
    held_out: list[HeldOut] = field(default_factory=list)
    final_costs: list[TurnCost] = field(default_factory=list)
    proposals: list[ProposalRow] = field(default_factory=list)
    repeats: list[tuple[int, int]] = field(default_factory=list)
    """(proposal, the earlier rejected proposal it repeats): must stay empty."""
    skills: list[dict[str, Any]] = field(default_factory=list)
    starts: int = 0
    reopened: list[int] = field(default_factory=list)
    leaked: list[str] = field(default_factory=list)
    """The model's repeats and copies that reached review (it knows which they were)."""
    bad: dict[int, str] = field(default_factory=dict)
    """Proposals that are one of the model's poor ideas (or a repeat of one): id -> its kind
    (`skills.BAD_KINDS`: password, US units, vague)."""
    asking_password: list[str] = field(default_factory=list)
    """Skills live at the end that make the model ask for the password when it loads them
    (a poor idea, or a skill written from users' complaints about being asked)."""
    trials: list[Trial] = field(default_factory=list)
    """Each trial before review, in the order run (none without `judge_accuracy`)."""
    seconds: float = 0.0

    @property
    def scripted(self) -> bool:
        return self.config.real_model is None

    @property
    def before(self) -> HeldOut:
        return self.held_out[0]

    @property
    def after(self) -> HeldOut:
        return self.held_out[-1]

    @property
    def costs(self) -> list[TurnCost]:
        return [c for s in self.cycles for c in s.costs] + self.final_costs

    @property
    def index_max(self) -> int:
        return max((c.index_tokens for c in self.costs), default=0)

    def bad_approved(self, kind: str) -> int:
        """Bad proposals of one kind that ended approved."""
        return sum(
            1
            for p in self.proposals
            if self.bad.get(p.id) == kind and p.status in ("approved", "applied")
        )

    def bad_reviewed(self, kind: str) -> int:
        """Bad proposals of one kind that reached review."""
        return sum(1 for p in self.proposals if self.bad.get(p.id) == kind)


def normalise(text: str) -> str:
    """Lower case, punctuation dropped, whitespace collapsed."""
    return " ".join(re.sub(r"[^\w\s]+", " ", text.lower()).split())


def repeats_of_rejections(
    rows: list[ProposalRow], reopened: set[int] | None = None
) -> list[tuple[int, int]]:
    """Proposals made after a rejection of the same content: (proposal id, rejected id).

    A rejection the reviewer reopened no longer counts: the claim may come back.
    """
    rejected = [r for r in rows if r.status == "rejected" and r.id not in (reopened or set())]
    found = []
    for p in rows:
        for r in rejected:
            same_new_skill = p.kind == r.kind == "create" and p.key == r.key
            if r.cycle < p.cycle and (p.content_hash == r.content_hash or same_new_skill):
                found.append((p.id, r.id))
                break
    return found


async def audit(
    gw: Gateway,
    result: Result,
    runs: dict[int, int],
    reviewer: ScriptedReviewer,
    model: ScriptedModel | None,
) -> None:
    """Read every proposal and skill back from the admin API and check the rejections held."""
    listed = await gw.api("GET", "/proposals?limit=1000")
    decisions = reviewer.decisions
    last = {d.proposal_id: d for d in decisions}  # a reopened proposal was decided twice
    slips = {pid for pid, d in last.items() if d.slip}
    result.reopened = list(reviewer.reopened)
    for brief in sorted(listed, key=lambda p: int(p["id"])):
        p = await gw.api("GET", f"/proposals/{brief['id']}")
        result.proposals.append(
            ProposalRow(
                id=int(p["id"]),
                cycle=runs.get(int(p["run"] or 0), 0),
                kind=str(p["kind"]),
                name=str(p["name"]),
                description=str(p["description"]),
                status=str(p["status"]),
                reason=p.get("reason"),
                content_hash=str(p["content_hash"]),
                slip=int(p["id"]) in slips,
            )
        )
    if len(result.proposals) != len(last):
        raise RuntimeError(f"{len(result.proposals)} proposals were made but {len(last)} decided")
    result.repeats = repeats_of_rejections(result.proposals, set(result.reopened))
    if model is not None:
        # A retirement bears its skill's name: retiring a bad skill is no bad proposal.
        result.bad = {
            p.id: BAD_KINDS[model.poor[p.name]]
            for p in result.proposals
            if p.name in model.poor and p.kind != "retire"
        }
        for stats in result.cycles:
            start, end = stats.emitted
            stats.tried = Counter(e.flavour for e in model.emitted[start:end])
            # The model knows which of its proposals repeat or copy: those that got through.
            made = {p.name for p in result.proposals if p.cycle == stats.cycle}
            result.leaked += [
                e.draft.name
                for e in model.emitted[start:end]
                if e.flavour in ("repeat", "duplicate") and e.draft.name in made
            ]
    result.skills = await gw.api("GET", "/skills")
    catalog = gw.parts.catalog
    result.asking_password = [
        name
        for name in sorted(catalog.enabled)
        if style_of([catalog.library.read(name).body]).ask_password
    ]
