"""A proposal's trial: real rated turns answered again with it and without it, compared blind.

Every created or updated skill that passes screening is tried before any admin is asked
(see `Synthesizer.stage`), in the synthesis pass, never on a user's turn:

- *what it claims to fix*: the 👎-rated answers of the sessions it is based on;
- *what it might break*: rated answers (👍 and 👎) of other sessions, held out from what the
  proposal was drawn from, on which the live prompt would offer it (the skill index's own
  selection, with the proposal in it), and for an update every answer that loaded the skill
  it replaces.

Each turn is answered again by the answering model, through the prompt the agent builds
(persona, the bounded history, the skill index, `load_skill`), once with the proposal
applied as the live prompt would apply it (`with_it`) and once as the prompt stands
(`control`, so the judge's own noise is measured). No tool runs: a call of any other tool
ends that answer, recorded as "would call X". The judge compares each new answer with the
answer the user rated (see `comparison`), and `verdict.decide` reads the counts.

Bounded: at most `turns_per_side` turns a side and `calls` model calls a proposal (a turn
starts only when its worst case fits), and the daily learning budget is asked before each
turn. A trial that cannot run (no rated turns, the judge unable to judge or unreachable, the
answering model failing, the budget) is *not measured* with why: the proposal still goes to
review, never held back.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from gateway.core.llm import LLM
from gateway.core.prompt import build_messages, load_skill_tool
from gateway.core.records import MessageRecord, SessionEvidence, Turn
from gateway.errors import ModelError
from gateway.review.proposals import Candidate
from gateway.review.trials import (
    MAX_PAIR_TEXT,
    ArmCounts,
    ArmName,
    Reason,
    SideCounts,
    SideName,
    TrialPair,
    TrialSummary,
)
from gateway.skills.selection import SkillIndex, render_index
from gateway.synthesis.calibration import Calibrator, Unreachable
from gateway.synthesis.comparison import TRIAL_QUESTION, ComparePair, Rated, Unanswered, compare
from gateway.synthesis.evidence import EvidenceSource
from gateway.synthesis.verdict import Arm, Side, Verdict, decide

log = logging.getLogger(__name__)

LOAD_ROUNDS = 1
"""`load_skill` rounds an answer may take before it must answer (the agent's loop, shortened:
nothing else runs in a trial)."""
TURN_CALLS = 2 * (LOAD_ROUNDS + 1) + 2
"""The most calls one turn takes: each arm's answer with its rounds, and two comparisons."""
POOL_SESSIONS = 100
"""Recent rated sessions read to find what a proposal might break."""


@dataclass(frozen=True)
class TrialConfig:
    """The trial's bounds and the agent's prompt settings it answers with."""

    turns_per_side: int = 3
    calls: int = 40
    persona: str = ""
    skill_index_tokens: int = 600
    history_tokens: int = 3000


class TrialStore(EvidenceSource, Protocol):
    """What a trial reads: sessions with rated answers, each with its turns and ratings."""

    async def rated_sessions(self, exclude: Sequence[int], limit: int) -> list[int]: ...


class Live(Protocol):
    """The live skills as the agent's prompt offers and loads them."""

    def offer(
        self, query: str, budget_tokens: int, exclude: Sequence[str] = ()
    ) -> tuple[list[str], str]: ...

    def load(self, name: str) -> str | None: ...

    def described(self) -> list[tuple[str, str]]: ...


class Applied:
    """The live skills with the proposal in place, as approving it would leave the index."""

    def __init__(self, live: Live, candidate: Candidate) -> None:
        self.live = live
        self.slug = candidate.slug
        self.body = candidate.content
        pairs = [(n, d) for n, d in live.described() if n != self.slug]
        self.index = SkillIndex([*pairs, (self.slug, candidate.description)])

    def offer(self, query: str, budget_tokens: int) -> tuple[list[str], str]:
        entries = self.index.select(query, budget_tokens)
        return [e.name for e in entries], render_index(entries)

    def load(self, name: str) -> str | None:
        return self.body if name == self.slug else self.live.load(name)


@dataclass(frozen=True)
class Sample:
    """One rated answer to try: its question, the history before it, its rating."""

    side: SideName
    session_id: int
    answer: Turn
    question: Turn
    history: list[Turn]
    rating: int
    comment: str | None


@dataclass
class Outcome:
    """What a trial found: its summary for the proposal's row, and every pair."""

    summary: TrialSummary
    pairs: list[TrialPair] = field(default_factory=list)


class Stop(Exception):
    """The trial cannot go on; `reason` is why (shown as "not measured: …")."""

    def __init__(self, reason: Reason) -> None:
        super().__init__(reason.text())
        self.reason = reason


def samples_of(evidence: SessionEvidence, side: SideName) -> list[Sample]:
    """Each rated normal answer of a session that has a question before it."""
    found = []
    for i, turn in enumerate(evidence.turns):
        if turn.role != "assistant" or turn.kind != "normal" or not turn.ratings:
            continue
        asked = [j for j in range(i) if evidence.turns[j].role == "user"]
        if not asked:
            continue
        q = asked[-1]
        rating = turn.ratings[-1]
        found.append(
            Sample(
                side=side,
                session_id=evidence.session_id,
                answer=turn,
                question=evidence.turns[q],
                history=evidence.turns[:q],
                rating=1 if rating.rating > 0 else -1,
                comment=rating.comment,
            )
        )
    return found


class Trial:
    """Tries proposals: chooses the turns, answers them again, asks the judge, decides."""

    def __init__(
        self,
        store: TrialStore,
        answerer: LLM,
        judge: LLM,
        live: Live,
        config: TrialConfig,
        *,
        calibrator: Calibrator[ComparePair] | None = None,
        functions: Callable[[], list[dict[str, Any]]] | None = None,
    ) -> None:
        self.store = store
        self.answerer = answerer
        self.judge = judge
        self.live = live
        self.config = config
        self.calibrator = calibrator
        """Tries the judge on the comparison before it is trusted (None: trusted untried)."""
        self.functions = functions
        """The live tools' function entries, offered as the agent offers them (never run)."""

    async def run(
        self,
        candidate: Candidate,
        held_out: Sequence[int] = (),
        budget_left: Callable[[], Awaitable[Reason | None]] | None = None,
    ) -> Outcome:
        """Try `candidate`; `held_out`: sessions it was drawn from (never a guard), beside its
        `based_on`; `budget_left` says why learning must stop now (None: go on)."""
        judge = self.judge.model or "the judge"
        fixes, guards = await self._samples(candidate, held_out)
        if not fixes and not guards:
            return not_measured(Reason(code="no_rated"), judge)
        try:
            await self._judge_able(judge)
        except Stop as stop:
            return not_measured(stop.reason, judge)
        applied = Applied(self.live, candidate)
        order = [s for pair in _interleave(fixes, guards) for s in pair]
        pairs: list[TrialPair] = []
        calls = 0
        stopped: Reason | None = None
        for sample in order:
            if calls + TURN_CALLS > self.config.calls:
                stopped = Reason(code="call_budget", values={"calls": str(self.config.calls)})
                break
            if budget_left is not None and (why := await budget_left()) is not None:
                stopped = why
                break
            try:
                for arm in ("with_it", "control"):
                    pair, used = await self._pair(candidate, sample, arm, applied)
                    calls += used
                    pairs.append(pair)
            except Stop as stop:
                return Outcome(not_measured(stop.reason, judge, calls).summary, pairs)
        summary = summarise(pairs, stopped, calls, judge)
        return Outcome(summary, pairs)

    async def _judge_able(self, judge: str) -> None:
        if self.calibrator is None:
            return
        try:
            result = await self.calibrator.result(self.judge, TRIAL_QUESTION)
        except Unreachable as exc:
            raise Stop(
                Reason(code="judge_uncalibrated", values={"judge": judge, "error": str(exc)})
            ) from exc
        if result.verdict == "unable":
            right = f"{result.correct}/{result.total}"
            raise Stop(Reason(code="judge_unable", values={"judge": judge, "right": right}))

    async def _samples(
        self, candidate: Candidate, held_out: Sequence[int]
    ) -> tuple[list[Sample], list[Sample]]:
        """What it claims to fix, and what it might break, each at most `turns_per_side`."""
        n = self.config.turns_per_side
        drawn = sorted({*candidate.based_on, *held_out})
        fixes = [
            s
            for e in await self.store.session_evidence(candidate.based_on)
            for s in samples_of(e, "fixes")
            if s.rating < 0
        ][:n]
        pool = await self.store.rated_sessions(drawn, POOL_SESSIONS)
        applied = Applied(self.live, candidate)
        liked: list[Sample] = []
        disliked: list[Sample] = []
        for evidence in await self.store.session_evidence(pool):
            for s in samples_of(evidence, "guards"):
                offered, _ = applied.offer(s.question.text, self.config.skill_index_tokens)
                own = candidate.kind == "update" and candidate.slug in s.answer.skills_loaded
                if own or candidate.slug in offered:
                    (liked if s.rating > 0 else disliked).append(s)
        guards = [s for pair in _interleave(liked, disliked) for s in pair][:n]
        return fixes, guards

    async def _pair(
        self, candidate: Candidate, sample: Sample, arm: ArmName, applied: Applied
    ) -> tuple[TrialPair, int]:
        """One arm's new answer and the judge's comparison; the calls it took."""
        skills: Applied | None = applied if arm == "with_it" else None
        after, calls = await self._answer(sample, skills)
        rated = Rated(sample.question.text, sample.rating, sample.comment, sample.answer.text)
        seed = f"{candidate.content_hash}:{sample.answer.message_id}:{arm}"
        pair = TrialPair(
            side=sample.side,
            arm=arm,
            message_id=sample.answer.message_id,
            rating=sample.rating,
            comment=sample.comment,
            question=sample.question.text[:MAX_PAIR_TEXT],
            before=sample.answer.text[:MAX_PAIR_TEXT],
            after=after[:MAX_PAIR_TEXT],
        )
        try:
            judged = await compare(self.judge, rated, after, seed=seed)
        except Unanswered as exc:
            if isinstance(exc.__cause__, ModelError):
                raise Stop(Reason(code="judge_failed", values={"error": str(exc)})) from exc
            return pair.model_copy(update={"why": str(exc)}), calls + 1
        return pair.model_copy(update={"outcome": judged.outcome, "why": judged.why}), calls + 1

    async def _answer(self, sample: Sample, skills: Applied | None) -> tuple[str, int]:
        """The answering model's new answer to the sample's question; the calls it took."""
        cfg = self.config
        query = sample.question.text
        if skills is None:
            offered, section = self.live.offer(query, cfg.skill_index_tokens)
            load = self.live.load
        else:
            offered, section = skills.offer(query, cfg.skill_index_tokens)
            load = skills.load
        history = [
            MessageRecord(
                id=t.message_id,
                session_id=sample.session_id,
                role="user" if t.role == "user" else "assistant",
                text=t.text,
                kind="normal" if t.kind == "normal" else "error",
                created_at=0.0,
            )
            for t in [*sample.history, sample.question]
        ]
        messages = build_messages(cfg.persona, section, history, cfg.history_tokens)
        functions = [load_skill_tool(offered)] if offered else []
        functions += self.functions() if self.functions is not None else []
        for round_ in range(LOAD_ROUNDS + 1):
            calls = round_ + 1
            try:
                completion = await self.answerer.complete(
                    messages, tools=(functions or None) if round_ < LOAD_ROUNDS else None
                )
            except ModelError as exc:
                raise Stop(Reason(code="answerer_failed", values={"error": str(exc)})) from exc
            if not completion.tool_calls:
                return (completion.text or "").strip() or "(no answer)", calls
            other = [c.name for c in completion.tool_calls if c.name != "load_skill"]
            if other:
                return f"would call {other[0]}", calls
            messages.append(
                {
                    "role": "assistant",
                    "content": completion.text or "",
                    "tool_calls": [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": c.arguments or "{}"},
                        }
                        for c in completion.tool_calls
                    ],
                }
            )
            for call in completion.tool_calls:
                name = str(call.args().get("name", ""))
                body = load(name) if name in offered else None
                result = body if body is not None else f"error: no enabled skill named {name!r}"
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        raise AssertionError("unreachable: the last round has no tools")


def _interleave(first: list[Sample], second: list[Sample]) -> list[tuple[Sample, ...]]:
    """first[0], second[0], first[1], ... as pairs (the longer one's rest alone)."""
    out: list[tuple[Sample, ...]] = []
    for i in range(max(len(first), len(second))):
        out.append(tuple(s[i] for s in (first, second) if i < len(s)))
    return out


def not_measured(reason: Reason, judge: str | None, calls: int = 0) -> Outcome:
    return Outcome(
        TrialSummary(
            verdict=Verdict.NOT_MEASURED.value,
            reason=reason.text(),
            why=reason,
            calls=calls,
            judge=judge,
        )
    )


def _arm(pairs: Sequence[TrialPair], arm: ArmName) -> Arm:
    mine = [p.outcome for p in pairs if p.arm == arm]
    return Arm(better=mine.count("better"), same=mine.count("same"), worse=mine.count("worse"))


def _side(pairs: Sequence[TrialPair]) -> Side:
    return Side(with_it=_arm(pairs, "with_it"), control=_arm(pairs, "control"))


def _counts(side: Side) -> SideCounts:
    def arm(a: Arm) -> ArmCounts:
        return ArmCounts(better=a.better, same=a.same, worse=a.worse)

    return SideCounts(tried=side.tried, with_it=arm(side.with_it), control=arm(side.control))


def summarise(
    pairs: Sequence[TrialPair], stopped: Reason | None, calls: int, judge: str | None
) -> TrialSummary:
    """The counts of each side and arm, and the verdict `decide` gives them."""
    fixes = _side([p for p in pairs if p.side == "fixes"])
    guards = _side([p for p in pairs if p.side == "guards"])
    liked = _side([p for p in pairs if p.side == "guards" and p.rating > 0])
    verdict = decide(fixes, guards, liked)
    reason = stopped
    if verdict == Verdict.NOT_MEASURED:
        unjudged = [p.why for p in pairs if p.outcome is None]
        reason = stopped or (
            Reason(code="unusable", values={"why": unjudged[0]})
            if unjudged
            else Reason(code="nothing_judged")
        )
    return TrialSummary(
        verdict=verdict.value,
        reason=reason.text() if reason is not None else None,
        why=reason,
        fixes=_counts(fixes),
        guards=_counts(guards),
        liked=_counts(liked),
        calls=calls,
        judge=judge,
    )
