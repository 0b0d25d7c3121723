"""Retention: conversations last active more than SKILLGATE_RETENTION_DAYS ago are deleted.

Messages, traces, ratings and delivery records go with their session; the session's id
stays in `deleted_sessions`, so proposals and decisions keep their provenance and the
console shows those sessions as deleted. Daily quota counts and processed stored updates
older than that go too, and so do the notes on a deleted chat's files (`MEDIA_META`) and the
platform's language of a user with no conversation left. A pending proposal every session of
which is now deleted is withdrawn (`Reviewer.withdraw_orphans`: its words and its trial's
pairs go, its staged file too, and the admins' cards say why). SQLite's log is checkpointed
after.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from gateway.core.ports import Checkpoint
from gateway.media.keep import discard
from gateway.store.inbox import PRUNE_CHUNK
from gateway.usage import utc_day

log = logging.getLogger(__name__)
DAY = 86400.0


class RetentionStore(Checkpoint, Protocol):
    async def delete_old_sessions(self, before: float, at: float) -> tuple[int, int, list[str]]: ...

    async def quota_prune(self, before_day: str) -> int: ...

    async def inbox_prune(self, older_than: float, limit: int = ...) -> int: ...


class Orphans(Protocol):
    """Withdrawing pending proposals whose evidence is gone (`Reviewer`)."""

    async def withdraw_orphans(self) -> list[int]: ...


@dataclass(frozen=True)
class Purged:
    sessions: int = 0
    messages: int = 0
    withdrawn: tuple[int, ...] = ()
    """Pending proposals withdrawn because their evidence is gone (`Reviewer.withdraw_orphans`)."""


async def purge_old(
    store: RetentionStore,
    days: int,
    now: float | None = None,
    media: Path | None = None,
    review: Orphans | None = None,
) -> Purged:
    """Delete what is older than `days` (in batches, each its own transaction); 0 keeps all.

    `media`: the dir of kept downloads (SKILLGATE_KEEP_MEDIA), whose files go with them.
    `review`: where the pending proposals left without evidence are withdrawn.
    """
    if days <= 0:
        return Purged()
    at = time.time() if now is None else now
    before = at - days * DAY
    sessions = messages = 0
    while True:
        gone, gone_messages, files = await store.delete_old_sessions(before, at)
        if media is not None and files:
            await asyncio.to_thread(discard, media, files)
        sessions += gone
        messages += gone_messages
        if gone == 0:
            break
    await store.quota_prune(utc_day(before))
    # Stored updates hold the users' words too: none outlives the retention (the inbox's
    # own pruning keeps processed ones a week at most).
    while await store.inbox_prune(before, PRUNE_CHUNK) == PRUNE_CHUNK:
        pass  # a chunk per unit of work: answers are stored between them
    withdrawn = await review.withdraw_orphans() if review is not None else []
    if withdrawn:
        log.info(
            "withdrew pending proposal(s) %s: every session they were made from is gone", withdrawn
        )
    if sessions or withdrawn:
        await store.checkpoint()  # the deleted words leave SQLite's write-ahead log too
        log.info(
            "retention: deleted %d session(s) with %d message(s) older than %d day(s)",
            sessions,
            messages,
            days,
        )
    return Purged(sessions, messages, tuple(withdrawn))
