"""The one way a draft becomes a proposal: screening, the same-claim check, the trial, the cards.

A learned draft (the model's, in a synthesis pass) and an imported skill (`skills.transfer`)
both come through `consider`: the rules of `screening` (names, size, secrets, the shapes of a
prompt injection, the tools configured), then the check against rejections, pending proposals
and live skills (`sameness`), then `Synthesizer.stage`: the trial on real rated answers
(`trial`), then `Reviewer.submit`, which stages the file and tells every admin with a card.
Nothing is written live here: a proposal waits for its approval.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Literal, NamedTuple

from gateway.review.proposals import Candidate, Proposal
from gateway.synthesis.answer import ProposalDraft
from gateway.synthesis.held import HELD_TRIES
from gateway.synthesis.screening import (
    Dropped,
    ScreenContext,
    renamed,
    repeat_of,
    safe_label,
    screen,
    sources,
    waits_for,
)
from gateway.synthesis.summary import (
    DroppedBrief,
    RunSummary,
    brief,
    check_brief,
    drafted,
    dropped_brief,
    rejected_repeat,
)

Outcome = Literal["acted", "refused", "held", "later", "waits"]


class Considered(NamedTuple):
    """What came of a draft, the sessions it is based on, and the pending proposal it waits
    for (`waits` only)."""

    outcome: Outcome
    based_on: list[int]
    waits_for: int | None = None


async def consider(
    draft: ProposalDraft,
    ctx: ScreenContext,
    stage: Callable[[Candidate], Awaitable[Proposal]],
    summary: RunSummary,
    *,
    max_proposals: int,
    secrets: Sequence[str],
    last_try: bool = False,
    wait: bool = False,
) -> Considered:
    """Screen, check and `stage` one draft (the trial, then review: `Synthesizer.stage`);
    what came of it, and the sessions it is based on.

    What happened is added to `summary` (proposed, suppressed, refused, checks, repeats).
    Past `max_proposals` a draft is still screened and checked, so a repeat is recorded as
    one; a new claim is then left for later (`later`). A candidate the judge could not be
    asked about is `held`, except on its `last_try`, when it goes to a person with the
    nearest known claims on its card. With `wait` (a pass), a draft for a skill that has a
    proposal awaiting review `waits` for that one's decision, to be considered again then;
    without it (an import, which its operator can send again) it is a repeat of that one.
    """
    result = screen(draft, ctx)
    if isinstance(result, Dropped):
        noted = dropped_brief(result)
        (summary.suppressed if result.suppressed else summary.refused).append(noted)
        # "No change to the live skill" is suppressed: the evidence has its skill.
        outcome: Literal["acted", "refused"] = "acted" if result.suppressed else "refused"
        return Considered(outcome, sources(draft.based_on, ctx.shown))
    if wait and (pending := waits_for(result, ctx)) is not None:
        return Considered("waits", result.based_on, pending.id)
    repeat, decision = await repeat_of(result, ctx)
    if decision is not None:
        summary.checks.append(check_brief(result.name, decision))
        if decision.outcome == "held" and last_try:
            check = summary.checks[-1]
            check.decision = "undecided"
            check.reason = (
                f"no usable answer after {HELD_TRIES} questions ({decision.detail}):"
                f" possibly the same as {decision.compared[0].label()}; decide yourself"
            )
        elif decision.outcome == "held":
            return Considered("held", result.based_on)
        if summary.checks[-1].decision == "undecided":  # no judgement: a person decides
            labels = [k.label() for k in decision.compared]
            result = result.model_copy(update={"possibly_same": labels})
    if repeat is not None:
        summary.suppressed.append(dropped_brief(repeat))
        if repeat.against == "rejected" and repeat.matched is not None:
            summary.repeats.append(rejected_repeat(repeat.matched, result))
        return Considered("acted", result.based_on)
    result, rename = renamed(result, ctx)
    if rename is not None and summary.checks:
        summary.checks[-1].reason = f"{summary.checks[-1].reason}; {rename}"
    if drafted(summary) >= max_proposals:
        reason = f"over the limit of {max_proposals} proposals per run"
        label = safe_label(draft.name, secrets)
        summary.refused.append(DroppedBrief(name=label, reason=reason))
        return Considered("later", result.based_on)
    proposal = await stage(result)
    summary.proposed.append(brief(proposal))
    if proposal.status == "pending":
        ctx.pending.append(proposal)
    return Considered("acted", result.based_on)
