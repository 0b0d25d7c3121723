"""Candidates held back because the same-claim question had no answer, asked again with backoff,
and those waiting for another proposal of their skill to be decided.

A candidate is never staged unchecked: when the model cannot say whether it repeats a
known claim, the draft, the sessions it may cite, the model that wrote it, why it waits and
when it is asked next are kept in the store (one JSON value). It is asked again at the
next pass, then after `BACKOFF` hours, then a day later: a question asked at temperature 0
gets the same answer, so asking at every pass only spends calls. After `HELD_TRIES`
questions without an answer it goes to a person, marked as possibly a repeat (see
`synthesizer`). A pass with nothing due asks nothing. At most `HELD_LIMIT` wait; past that
a candidate's sessions stay unconsumed instead.

A pass's update of a skill that already has a proposal awaiting review (one staged file per
skill) waits here too, with `waits_for` set: it is considered again, from the start, at the
first pass after that proposal is decided (approved, rejected, withdrawn or expired), so its
evidence is not lost to a decision it could not see. Waiting asks no question and uses none of
its tries.
"""

from __future__ import annotations

import json
import logging

from pydantic import BaseModel, Field, ValidationError

from gateway.core.ports import Meta
from gateway.synthesis.answer import ProposalDraft

log = logging.getLogger(__name__)
HELD_KEY = "synthesis.held"
HELD_LIMIT = 20
HELD_TRIES = 4
"""Questions asked about one candidate at most; then a person decides."""
BACKOFF = (0.0, 4 * 3600.0, 86400.0)
"""Seconds until the next question after the first, second and third unanswered one."""


def next_try(tries: int, now: float) -> float:
    """When a candidate asked `tries` times without an answer is asked again."""
    return now + BACKOFF[min(tries, len(BACKOFF)) - 1]


class HeldDraft(BaseModel):
    """A draft waiting for its same-claim answer, or for a pending proposal's decision."""

    draft: ProposalDraft
    shown: list[int] = Field(default_factory=list)
    model: str | None = None
    tries: int = 1
    """Questions asked about it without a usable answer."""
    next_at: float = 0.0
    """When it is asked again (epoch seconds; 0: at the next pass)."""
    reason: str = ""
    """Why the last question had no answer, or what it waits for."""
    waits_for: int | None = None
    """The pending proposal of its skill it waits for; None: it waits for an answer."""


def waiting_for(entry: HeldDraft, pending: int | None) -> HeldDraft:
    """`entry` waiting for the decision on `pending`, the proposal of its skill awaiting review."""
    if pending is None:
        raise ValueError("a draft waits for a pending proposal")
    reason = f"proposal #{pending} for its skill awaits review: considered again once decided"
    return entry.model_copy(update={"waits_for": pending, "next_at": 0.0, "reason": reason})


async def held_drafts(store: Meta) -> list[HeldDraft]:
    """The drafts waiting, oldest first; an unreadable entry is dropped with a warning."""
    try:
        raw = json.loads(await store.get_meta(HELD_KEY) or "[]")
    except json.JSONDecodeError:
        log.warning("the held-back candidates are not readable JSON; starting afresh")
        return []
    out = []
    for item in raw if isinstance(raw, list) else []:
        try:
            out.append(HeldDraft.model_validate(item))
        except ValidationError:
            log.warning("dropping an unreadable held-back candidate")
    return out


async def keep_held(store: Meta, drafts: list[HeldDraft]) -> None:
    """Replace the waiting drafts with `drafts`."""
    await store.set_meta(HELD_KEY, json.dumps([d.model_dump() for d in drafts]))


async def hold(store: Meta, draft: HeldDraft) -> bool:
    """Add a draft to those waiting; False (nothing kept) when `HELD_LIMIT` already wait."""
    drafts = await held_drafts(store)
    if len(drafts) >= HELD_LIMIT:
        name = draft.draft.name
        log.warning("%d candidates held back already; %s waits in its sessions", len(drafts), name)
        return False
    await keep_held(store, [*drafts, draft])
    return True
