"""Candidates held back because the same-claim question had no answer, kept for the next pass.

A candidate is never staged unchecked: when the model cannot say whether it repeats a
known claim, the draft, the sessions it may cite and the model that wrote it are kept in
the store (one JSON value), and each pass checks them again before reading new evidence.
At most `HELD_LIMIT` wait; past that a candidate's sessions stay unconsumed instead.
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


class HeldDraft(BaseModel):
    """A draft waiting for its same-claim answer."""

    draft: ProposalDraft
    shown: list[int] = Field(default_factory=list)
    model: str | None = None


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
