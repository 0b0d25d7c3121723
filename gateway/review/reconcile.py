"""Start-up repair: make review rows and skill files agree after a crash.

A decision is claimed in the database, then the files change, then the
registry; a crash can stop between any two steps. Reading both sides, this
finishes what was decided and removes what nobody wants:

- a live file carrying a proposal that is still pending (renamed, row not
  updated) makes that proposal approved;
- an approved proposal not yet promoted is promoted (a retirement disables its
  skill), or marked stale when the live skill changed meanwhile; one whose file
  is live gets its registry row;
- a live file carrying a rolled-back proposal gets its previous text back;
- a pending proposal without its staged file is staged again from its row;
- a staged file that no pending proposal owns is removed.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping

from gateway.review.proposals import Proposal
from gateway.review.reviewer import (
    STALE_REASON,
    Reviewer,
    based_on_other,
    live_proposal,
)
from gateway.skills.files import Described, describe_files

log = logging.getLogger(__name__)
RECONCILER = "reconcile"


async def reconcile(
    reviewer: Reviewer,
    described: Mapping[str, Described] | None = None,
    staged: Collection[str] | None = None,
) -> list[str]:
    """Repair what a crash left half done; returns one line per repair.

    `described` is a scan of the library taken just before (`describe_files`), if any, and
    `staged` the folders holding a staged file, from the same scan.
    """
    fixes: list[str] = []
    if described is None:
        described = await describe_files(reviewer.library, reviewer.store)
    handled = await _live_files(reviewer, described, fixes)
    for p in await reviewer.store.unfinished_promotions():
        if p.id not in handled:
            await _finish_promotion(reviewer, p, fixes)
    pending = await reviewer.store.pending_proposals()
    for p in pending:
        if p.kind == "retire":
            continue  # a retirement stages no file
        if live_proposal(reviewer.staging.staged_text(p.slug)) != p.id:
            await reviewer.restage(p)
            fixes.append(f"proposal #{p.id}: staged file written again")
    owned = {p.slug for p in pending if p.kind != "retire"}
    if fixes or staged is None:  # a repair may have written or removed staged files
        staged = reviewer.staging.staged_slugs()
    for slug in staged:
        if slug not in owned:
            reviewer.staging.discard(slug)
            fixes.append(f"{slug}: removed a staged file no pending proposal owns")
    for line in fixes:
        log.warning("review state repaired: %s", line)
    return fixes


async def _live_files(
    reviewer: Reviewer, described: Mapping[str, Described], fixes: list[str]
) -> set[int]:
    """Finish decisions whose file step already happened; returns the proposals handled."""
    handled: set[int] = set()
    # Only files carrying a proposal can need this; unchanged ones are not read to find out.
    for slug in sorted(s for s, d in described.items() if d.proposal is not None):
        pid = live_proposal(reviewer.staging.live_text(slug))
        p = await reviewer.store.get_proposal(pid) if pid is not None else None
        if p is None or p.slug != slug:
            continue
        now = reviewer.clock()
        live = await reviewer.live(slug)
        if live is None:
            continue
        if p.status == "pending":
            if not await reviewer.store.transition(
                p.id, from_status="pending", to_status="approved", by=RECONCILER, at=now
            ):
                continue
            p = await reviewer.get(p.id)
            fixes.append(f"proposal #{p.id}: its file was live, recorded as approved")
        if p.status in ("approved", "applied") and p.promoted_at is None:
            record = await reviewer.store.get_skill_record(slug)
            await reviewer.register(p, live.text, live.source, p.status, now, record)
            fixes.append(f"proposal #{p.id}: registry updated for {slug}")
            handled.add(p.id)
        elif p.status == "rolled_back":
            version = await reviewer.store.replaced_version(p.id)
            if version is not None:
                await reviewer.restore(p, version.content, now)
                fixes.append(f"proposal #{p.id}: rollback of {slug} finished")
    return handled


async def _finish_promotion(reviewer: Reviewer, p: Proposal, fixes: list[str]) -> None:
    """An approval whose rename never happened: do it now, unless the live skill moved on."""
    if based_on_other(p, reviewer.staging.live_text(p.slug)):
        await reviewer.store.transition(
            p.id,
            from_status=p.status,
            to_status="stale",
            by=RECONCILER,
            at=reviewer.clock(),
            reason=STALE_REASON,
        )
        if p.kind != "retire":
            reviewer.staging.discard(p.slug)
        fixes.append(f"proposal #{p.id}: live skill changed before promotion, marked stale")
        return
    record = await reviewer.store.get_skill_record(p.slug)
    await reviewer.promote(p, await reviewer.live(p.slug), record)
    fixes.append(f"proposal #{p.id}: promotion of {p.slug} finished")
