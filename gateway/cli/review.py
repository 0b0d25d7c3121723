"""`skillgate proposals ...` and `skillgate skills ...`: review from the terminal.

The rules are the chat's: the first decision wins, a later one says who won.
A decision made here also updates the admins' chat cards (Telegram copies are
edited, LINE admins get a notice) before the command returns.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from gateway.channels.registry import by_name
from gateway.config import Settings
from gateway.conversation.review import skills_text
from gateway.errors import ProposalNotFound, SkillError
from gateway.review.answers import REVIEW_ERRORS, refusal
from gateway.review.cards import build_card, clip, decider_label, full_diff, when
from gateway.review.proposals import Proposal
from gateway.review.reviewer import Decision
from gateway.review.staging import iso
from gateway.runtime.assembly import Parts, chat_cards, close_parts, open_parts


@asynccontextmanager
async def _parts(settings: Settings) -> AsyncIterator[Parts]:
    parts = await open_parts(settings)
    try:
        yield parts
    finally:
        await close_parts(parts)


def refused(exc: Exception, what: str) -> int:
    """Say on stderr why a review operation did nothing (per the review table); status 1."""
    if refusal(exc).answer == "not_applied":
        print(f"skillgate: could not {what}: {exc}", file=sys.stderr)
    else:
        print(f"skillgate: {exc}", file=sys.stderr)
    return 1


def _line(p: Proposal) -> str:
    what = "new" if p.kind == "create" else "update"
    line = f"#{p.id:<4} {p.status:<11} {what:<6} {p.slug:<28} {clip(p.description, 60)}"
    if p.decided_by:
        line += f"  [{decider_label(p.decided_by, users=by_name())}, {when(p.decided_at)}]"
    return line


async def list_proposals(settings: Settings, status: str | None, limit: int) -> int:
    """Proposals newest first, one per line."""
    async with _parts(settings) as parts:
        rows = await parts.store.list_proposals(status, limit=limit)
    if not rows:
        print("no proposals" + (f" with status {status}" if status else ""))
    for p in rows:
        print(_line(p))
    return 0


async def show_proposal(settings: Settings, proposal_id: int) -> int:
    """The card's text, the provenance, then the full diff."""
    async with _parts(settings) as parts:
        try:
            p = await parts.review.get(proposal_id)
        except ProposalNotFound as exc:
            return refused(exc, f"show proposal #{proposal_id}")
        card = await build_card(p, parts.review, parts.store)
        diff = await full_diff(p, parts.review, parts.store)
    sessions = ", ".join(str(s) for s in p.based_on) or "none"
    print(card.plain())
    print(f"Model: {p.model or 'unknown'}; generated {iso(p.generated_at)}; sessions: {sessions}")
    print()
    print(diff.rstrip("\n") or "(no differences)")
    return 0


async def decide(
    settings: Settings, proposal_id: int, decider: str, *, reject: bool, reason: str | None
) -> int:
    """Approve or reject; exit status 1 when nothing changed (unknown, stale, decided before)."""
    async with _parts(settings) as parts, chat_cards(parts):
        try:
            if reject:
                result = await parts.review.reject(proposal_id, decider, reason)
            else:
                result = await parts.review.approve(proposal_id, decider)
        except REVIEW_ERRORS as exc:
            return refused(exc, f"apply proposal #{proposal_id}")
        name = await parts.store.reviewer_name(result.proposal.decided_by or "")
    return _report(result, name)


async def rollback(settings: Settings, proposal_id: int, decider: str, reason: str | None) -> int:
    """Undo an approved update or retirement; exit status 1 when it cannot be undone (now)."""
    return await _undo(settings, proposal_id, decider, reason, reopen=False)


async def reopen(settings: Settings, proposal_id: int, decider: str, reason: str | None) -> int:
    """Take back a rejection; exit status 1 when the proposal is not a rejected one."""
    return await _undo(settings, proposal_id, decider, reason, reopen=True)


async def _undo(
    settings: Settings, proposal_id: int, decider: str, reason: str | None, *, reopen: bool
) -> int:
    verb = "reopen" if reopen else "roll back"
    async with _parts(settings) as parts, chat_cards(parts):
        operation = parts.review.reopen if reopen else parts.review.rollback
        try:
            result = await operation(proposal_id, decider, reason)
        except REVIEW_ERRORS as exc:
            return refused(exc, f"{verb} #{proposal_id}")
        name = await parts.store.reviewer_name(result.proposal.decided_by or "")
    return _report(result, name)


async def switch_skill(
    settings: Settings, slug: str, enabled: bool, decider: str, reason: str | None
) -> int:
    """Turn a registered skill off or on by hand; its files are left as they are."""
    async with _parts(settings) as parts:
        try:
            record = await parts.review.switch(slug, enabled, decider, reason)
        except SkillError as exc:
            print(f"skillgate: {exc}", file=sys.stderr)
            return 1
    state = "enabled" if enabled else "disabled"
    because = f" ({reason.strip()})" if reason and reason.strip() else ""
    print(f"{record.slug} is {state}{because}; its files are unchanged")
    return 0


def _report(result: Decision, name: str | None) -> int:
    p = result.proposal
    if result.outcome == "rolled_back":
        what = "enabled again" if p.kind == "retire" else "back to the text it replaced"
        print(f"rolled back #{p.id}: {p.slug} is {what}")
        return 0
    if result.outcome == "reopened":
        because = f" ({p.reopen_reason})" if p.reopen_reason else ""
        print(f"reopened #{p.id} ({p.slug}){because}; it waits for review again")
        return 0
    if result.outcome == "approved":
        print(f"approved #{p.id}: {p.slug} is live now")
        return 0
    if result.outcome == "rejected":
        because = f" ({p.reason})" if p.reason else ""
        print(f"rejected #{p.id} ({p.slug}){because}; it will not be proposed again")
        return 0
    if result.outcome == "stale":
        print(
            f"proposal #{p.id} is stale: {p.slug} changed after it was made; nothing applied",
            file=sys.stderr,
        )
        return 1
    who = decider_label(p.decided_by, name, users=by_name())
    print(
        f"proposal #{p.id} was already {p.status} by {who} at {when(p.decided_at)}",
        file=sys.stderr,
    )
    return 1


async def list_skills(settings: Settings) -> int:
    """Every registered skill with its source, status and 👍 rate."""
    async with _parts(settings) as parts:
        print(await skills_text(parts.store, parts.synthesizer))
    return 0
