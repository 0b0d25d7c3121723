"""The trial before the card, simulated: each proposal tried on rated turns, a judge compares.

Every proposal that reaches review (not a retirement) is tried on the training users'
rated turns before the reviewer decides:

- *what it claims to fix*: the 👎-rated turns of the sessions in its `based_on`;
- *what it might break*: rated turns of other sessions on which the prompt would offer it
  (the gateway's own bounded index, `SkillIndex.select`, under the run's budget); the 👍
  part of them is *liked*.

Up to `trial_turns` turns a side. Each turn is answered again by the scripted model with
the proposal in place (`with_it`: the live skills and the proposal, offered and loaded as
the model does in a turn) and without it (`control`: the live skills alone); the "before"
of each pair is the answer the user rated.

**The judge is simulated.** It is no model: the truth of a pair comes from the simulated
user's real preferences (the answer that misses fewer of them serves the user better; one
that asks for a password misses all of them), and the judge states that truth with
probability `judge_accuracy`; otherwise one of the two wrong verdicts, drawn from the
seed. An accuracy of 1/3 is a three-sided coin: verdicts say nothing about the answers.
The counts per arm go to the gateway's rule, `gateway.synthesis.verdict.decide`.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from eval.answers import Style, compose, relevant, style_of
from eval.corpus import Question
from eval.world import PASSWORD_ASK, PREFERENCES, User, unmet
from gateway.errors import SkillError
from gateway.skills.library import parse_skill
from gateway.skills.selection import SkillIndex
from gateway.synthesis.verdict import Arm, Side, Verdict, decide

Pair = Literal["better", "same", "worse"]
PAIRS: tuple[Pair, ...] = ("better", "same", "worse")
CHANCE = 1 / 3
"""The accuracy of a judge whose verdicts carry no information (three verdicts)."""


@dataclass(frozen=True)
class RatedTurn:
    """A training user's rated turn: what they asked, what they were shown, how they rated it."""

    cycle: int
    session_id: int
    user: User
    question: Question
    text: str
    value: int


@dataclass(frozen=True)
class LiveSkill:
    """A skill as the prompt knows it: its index line's name and description, and its body."""

    name: str
    description: str
    body: str


@dataclass(frozen=True)
class Candidate:
    """A proposal as the trial applies it: a new skill, or a new text for `target`."""

    name: str
    description: str
    body: str
    target: str | None = None
    based_on: frozenset[int] = frozenset()

    @classmethod
    def of(cls, proposal: dict[str, Any]) -> Candidate:
        """From the admin API's proposal (`GET /admin/api/proposals/{id}`)."""
        content = str(proposal.get("content") or "")
        name = str(proposal["target"] or proposal["name"])
        description, body = str(proposal["description"]), content
        try:
            skill = parse_skill(content)
        except SkillError:
            pass  # a bare body: the text as it stands
        else:
            description, body = skill.description, skill.body
        return cls(
            name=name,
            description=description,
            body=body,
            target=proposal["target"] or None,
            based_on=frozenset(int(s) for s in proposal.get("based_on") or ()),
        )

    def applied(self, live: Sequence[LiveSkill]) -> list[LiveSkill]:
        """The live skills with this proposal in place (an update replaces its target)."""
        kept = [s for s in live if s.name != self.name]
        return [*kept, LiveSkill(self.name, self.description, self.body)]


def offered(question: Question, skills: Sequence[LiveSkill], budget: int) -> list[LiveSkill]:
    """The skills the prompt's index offers for this question, as the agent selects them."""
    by_name = {s.name: s for s in skills}
    index = SkillIndex((s.name, s.description) for s in skills)
    chosen = index.select(question.text, budget)
    # The model reads the index line's (possibly shortened) description, as in a turn.
    return [LiveSkill(e.name, e.description, by_name[e.name].body) for e in chosen]


def answer(question: Question, skills: Sequence[LiveSkill], budget: int) -> str:
    """The scripted model's answer with these skills live (see `ScriptedModel.chat`)."""
    bodies = [
        s.body for s in offered(question, skills, budget) if relevant(question.text, s.description)
    ]
    return compose(question, style_of(bodies) if bodies else Style())


def misses(user: User, text: str, question: Question) -> int:
    """How many of the user's preferences an answer misses; asking for a password misses all."""
    if PASSWORD_ASK.search(text):
        return len(PREFERENCES) + 1
    return len(unmet(user.preferences, text, question))


def truth(turn: RatedTurn, after: str) -> Pair:
    """Whether `after` serves this user better than the answer they rated, by their preferences."""
    before, now = (
        misses(turn.user, turn.text, turn.question),
        misses(turn.user, after, turn.question),
    )
    if now < before:
        return "better"
    if now > before:
        return "worse"
    return "same"


class SimulatedJudge:
    """States a pair's truth with probability `accuracy`, else one of the other two verdicts."""

    def __init__(self, accuracy: float) -> None:
        if not 0.0 <= accuracy <= 1.0:
            raise ValueError("a judge's accuracy is between 0 and 1")
        self.accuracy = accuracy

    def __call__(self, right: Pair, rng: random.Random) -> Pair:
        draw, wrong = rng.random(), rng.choice([p for p in PAIRS if p != right])
        return right if draw < self.accuracy else wrong


@dataclass
class Trial:
    """One proposal's trial: its sides' counts and the rule's verdict."""

    proposal_id: int
    name: str
    cycle: int
    fixes: Side = field(default_factory=Side)
    guards: Side = field(default_factory=Side)
    liked: Side = field(default_factory=Side)
    verdict: Verdict = Verdict.NOT_MEASURED
    why: str = ""
    """Why nothing was measured, when nothing was."""


def _arm(verdicts: Iterable[Pair]) -> Arm:
    found = list(verdicts)
    return Arm(found.count("better"), found.count("same"), found.count("worse"))


def _side(
    turns: Sequence[RatedTurn],
    candidate: Candidate,
    live: Sequence[LiveSkill],
    budget: int,
    judge: SimulatedJudge,
    rng: random.Random,
) -> tuple[list[Pair], list[Pair]]:
    """The judge's verdicts on each turn, with the proposal and without it, in turn order."""
    with_it, control = [], []
    trying = candidate.applied(live)
    for turn in turns:
        with_it.append(judge(truth(turn, answer(turn.question, trying, budget)), rng))
        control.append(judge(truth(turn, answer(turn.question, live, budget)), rng))
    return with_it, control


def run_trial(
    proposal: dict[str, Any],
    cycle: int,
    turns: Sequence[RatedTurn],
    live: Sequence[LiveSkill],
    *,
    judge: SimulatedJudge,
    per_side: int,
    budget: int,
    seed: int,
) -> Trial:
    """Try one proposal on the rated turns; every draw comes from the seed and the proposal."""
    candidate = Candidate.of(proposal)
    rng = random.Random(f"{seed}:trial:{cycle}:{proposal['content_hash']}")
    claimed = [t for t in turns if t.session_id in candidate.based_on and t.value < 0]
    fixes = claimed[-per_side:]  # the newest
    trying = candidate.applied(live)
    others = [
        t
        for t in turns
        if t.session_id not in candidate.based_on
        and any(s.name == candidate.name for s in offered(t.question, trying, budget))
    ]
    guards = [others[n] for n in sorted(rng.sample(range(len(others)), min(per_side, len(others))))]
    fixed_with, fixed_without = _side(fixes, candidate, live, budget, judge, rng)
    guard_with, guard_without = _side(guards, candidate, live, budget, judge, rng)
    liked = [n for n, t in enumerate(guards) if t.value > 0]
    trial = Trial(
        int(proposal["id"]),
        candidate.name,
        cycle,
        fixes=Side(_arm(fixed_with), _arm(fixed_without)),
        guards=Side(_arm(guard_with), _arm(guard_without)),
        liked=Side(_arm(guard_with[n] for n in liked), _arm(guard_without[n] for n in liked)),
    )
    trial.verdict = decide(trial.fixes, trial.guards, trial.liked)
    if trial.verdict is Verdict.NOT_MEASURED:
        trial.why = "no rated turns to try"
    return trial
