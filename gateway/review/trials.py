"""A proposal's trial as the reviewer reads it: what was tried, what the judge said, the verdict.

The synthesis pass runs the trial (see `gateway.synthesis.trial`) and hands its outcome to
review with the candidate; it is stored with the proposal (its counts and verdict on the
proposal's row, each pair in `trial_pairs`), so every card and page reads the same figures.
The verdict's rule lives in `gateway.synthesis.verdict`; here it is only a word to show.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from gateway.i18n import ENGLISH, N_, Np_, Texts

Outcome = Literal["better", "same", "worse"]
SideName = Literal["fixes", "guards"]
ArmName = Literal["with_it", "control"]
VerdictName = Literal["measured_gain", "no_measured_gain", "regressions", "not_measured"]
ReasonCode = Literal[
    "no_rated",
    "judge_uncalibrated",
    "judge_unable",
    "judge_failed",
    "answerer_failed",
    "call_budget",
    "learning_budget",
    "lease_lost",
    "unusable",
    "nothing_judged",
]

MAX_PAIR_TEXT = 4000
"""Of each text a pair keeps (the question, the rated answer, the new answer)."""


class TrialPair(BaseModel):
    """One rated turn answered again on one arm, and the judge's comparison with the rated
    answer."""

    side: SideName
    arm: ArmName
    message_id: int
    """The rated answer (its question is the user message before it)."""
    rating: int
    comment: str | None = None
    question: str
    before: str
    """The answer the user rated."""
    after: str
    """The new answer, or "would call X" where the model called a tool."""
    outcome: Outcome | None = None
    """Better, the same or worse than `before`; None when it could not be judged."""
    why: str = ""


class ArmCounts(BaseModel):
    better: int = 0
    same: int = 0
    worse: int = 0


class SideCounts(BaseModel):
    """One side's turns: how many were tried, and each arm's verdicts."""

    tried: int = 0
    with_it: ArmCounts = Field(default_factory=ArmCounts)
    control: ArmCounts = Field(default_factory=ArmCounts)


class Reason(BaseModel):
    """Why a trial was not measured or stopped early, as a template and its values, so that each
    card says it in its reader's language (the values are names, figures and error details)."""

    code: ReasonCode
    values: dict[str, str] = Field(default_factory=dict)

    def text(self, texts: Texts = ENGLISH) -> str:
        return texts(REASONS[self.code], **self.values)


class TrialSummary(BaseModel):
    """The trial's counts and verdict, kept on the proposal's row (no user text in it)."""

    verdict: VerdictName
    reason: str | None = None
    """Why it was not measured, or why it stopped early (the call budget reached), in English."""
    why: Reason | None = None
    """The same reason, to be translated (None on trials stored before it was kept)."""
    fixes: SideCounts = Field(default_factory=SideCounts)
    guards: SideCounts = Field(default_factory=SideCounts)
    liked: SideCounts = Field(default_factory=SideCounts)
    """The 👍-rated part of `guards`."""
    calls: int = 0
    """Model calls the trial made (answers and comparisons)."""
    judge: str | None = None
    """The model that compared."""


TRIAL = N_("🧪 Trial")
VERDICTS = {
    "measured_gain": N_("measured gain"),
    "no_measured_gain": N_("no measured gain"),
    "regressions": N_("regressions"),
    "not_measured": N_("not measured"),
}
NOT_MEASURED_BECAUSE = N_("not measured: {reason}")
# TRANSLATORS: each follows "not measured: " (or says why a trial stopped early) on a card.
REASONS: dict[str, str] = {
    "no_rated": N_("no rated answers to try it on"),
    "judge_uncalibrated": N_("the judge {judge} could not be calibrated: {error}"),
    "judge_unable": N_(
        "the judge {judge} cannot compare answers ({right} right on its calibration)"
    ),
    "judge_failed": N_("the judge could not be asked: {error}"),
    "answerer_failed": N_("the answering model could not be asked: {error}"),
    "call_budget": N_("stopped at its budget of {calls} model calls (SKILLGATE_TRIAL_CALLS)"),
    "learning_budget": N_(
        "learning budget reached: {spent} of {limit} tokens spent today"
        " (SKILLGATE_LEARNING_DAILY_TOKENS); learning resumes at 00:00 UTC"
    ),
    "lease_lost": N_("the run lock's lease ran out and another pass took it"),
    "unusable": N_("the judge gave no usable answer ({why})"),
    "nothing_judged": N_("nothing was judged"),
}
# TRANSLATORS: the trial's first line: the 👎 answers a proposal claims to fix, answered
# again with the proposal and without it (the control), and how many got better each way.
TRIED_DISLIKED = Np_(
    "Tried on {n} answer users disliked: better with it {with_it}, without it {control}.",
    "Tried on {n} answers users disliked: better with it {with_it}, without it {control}.",
)
# TRANSLATORS: the trial's second line: answers users liked, and how many got worse.
TRIED_LIKED = Np_(
    "On {n} answer users liked: worse with it {with_it}, without it {control}.",
    "On {n} answers users liked: worse with it {with_it}, without it {control}.",
)
NOTHING_LIKED = N_("No answer users liked was tried.")


def verdict_text(summary: TrialSummary, texts: Texts = ENGLISH) -> str:
    """The verdict in words; "not measured: why" where it could not be measured."""
    if summary.verdict == "not_measured":
        reason = reason_text(summary, texts) or texts(VERDICTS["not_measured"])
        return texts(NOT_MEASURED_BECAUSE, reason=reason)
    return texts(VERDICTS[summary.verdict])


def reason_text(summary: TrialSummary, texts: Texts = ENGLISH) -> str | None:
    """Why it was not measured or stopped early, in `texts`' language where it can be."""
    return summary.why.text(texts) if summary.why is not None else summary.reason


def trial_lines(summary: TrialSummary, texts: Texts = ENGLISH) -> list[str]:
    """The trial on a card, in one or two lines after its verdict.

    E.g. ["measured gain", "Tried on 6 answers users disliked: better with it 4, without it
    1. On 6 answers users liked: worse with it 0, without it 0."].
    """
    head = verdict_text(summary, texts)
    if summary.verdict == "not_measured":
        return [head]
    fixes, liked = summary.fixes, summary.liked
    first = texts.plural(
        TRIED_DISLIKED,
        fixes.tried,
        with_it=fixes.with_it.better,
        control=fixes.control.better,
    )
    if liked.tried:
        second = texts.plural(
            TRIED_LIKED, liked.tried, with_it=liked.with_it.worse, control=liked.control.worse
        )
    else:
        second = texts(NOTHING_LIKED)
    return [head, f"{first} {second}"]
