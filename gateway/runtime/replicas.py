"""Several `skillgate serve` replicas on one PostgreSQL database (`SKILLGATE_DATABASE_URL`).

What changes when replicas share the database, all of it here:

- `SharedInboxWorker`: a webhook may land on any replica; every replica claims stored
  updates from the database (only the oldest of each chat, under a lease it renews),
  so each update is answered by exactly one replica, a chat's updates in order, and
  the work of a replica that died is taken over when its lease runs out.
- `startup_lock`: replicas starting together finish promotions, check the skills
  volume and register skills one after another.
- `check_skills_volume`: the skill files live on one volume that every replica
  mounts; a replica whose skills folder is not that volume refuses to start.
- `RegistryWatcher`: a decision taken on one replica reloads the skills of all.

One synthesis pass at a time and first-decision-wins need nothing here: both are
rows in the database (the synthesis lease, conditional status updates).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path

from gateway.core.models import MessageKind
from gateway.core.ports import ConversationStore
from gateway.core.records import ClaimFence, InboxItem, MessageRecord, Trace
from gateway.core.tasks import cancel_and_wait
from gateway.core.turn import QuotaSpend
from gateway.errors import ClaimLost, ConfigError, StoreError
from gateway.runtime.inbox import InboxWorker, current_attempt, finish
from gateway.store.registry import RegistryQueries
from gateway.store.replicas import ReplicaQueries
from gateway.store.synthesis import SynthesisQueries

log = logging.getLogger(__name__)

VOLUME_MARKER = ".skillgate-volume"
"""A file in the skills folder naming the shared volume; its id is also in the database."""
VOLUME_KEY = "skills_volume_id"
STARTUP_LOCK = "startup"


FRESH_FENCE_SECONDS = 1.0
"""A send this soon after the answer's statement checked the claim (and extended the lease to
a whole one) needs no check of its own; later (speech or pictures made in between), it has."""


class FencedAnswers:
    """The agent's store with replicas: the statement that stores an update's answer also
    checks the attempt's claim and extends its lease (`add_answer`'s `fence`), and the reply
    sent right after needs no round trip of its own for it (`SharedInboxWorker.hold`)."""

    def __init__(self, store: ConversationStore) -> None:
        self.store = store
        self.start_turn = store.start_turn
        self.withhold_messages = store.withhold_messages
        self.set_attachments_sent = store.set_attachments_sent

    async def add_answer(
        self,
        session_id: int,
        text: str,
        *,
        kind: MessageKind,
        inbox_id: int | None,
        trace: Trace,
        now: float,
        user_id: str | None,
        spent: QuotaSpend | None = None,
        tools: Sequence[tuple[str, str]] = (),
        fence: ClaimFence | None = None,
    ) -> MessageRecord:
        attempt = current_attempt()
        mine = attempt.fence if attempt is not None else None
        if fence is None and mine is not None and inbox_id == mine.item_id:
            fence = mine
        answer = await self.store.add_answer(
            session_id,
            text,
            kind=kind,
            inbox_id=inbox_id,
            trace=trace,
            now=now,
            user_id=user_id,
            spent=spent,
            tools=tools,
            fence=fence,
        )
        if fence is not None and attempt is not None and fence is attempt.fence:
            attempt.fenced_at = time.monotonic()
        return answer


def replica_name() -> str:
    """This process among the replicas: host, pid and a random part (pids repeat)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


class SharedInboxWorker(InboxWorker):
    """The inbox worker for replicas: claims work from the database instead of its own queue.

    `submit` (an update this replica just stored) only wakes the claim loop; the loop
    also polls every `poll` seconds for updates stored by other replicas. Retries,
    backoff and giving up are the single-process worker's, unchanged.

    A claim can be lost: a replica that stalls past its lease (an overloaded host, a
    paused VM) finds the update taken over. So every reply checks the claim first
    (`hold`, the channels' fenced responders), the bookkeeping is fenced by the claim
    number, and work whose claim a renewal finds gone is cancelled. Renewals run four
    times a lease on a connection of their own (`@urgent`), never queued behind busy
    handlers: a slow renewal is what let claims expire under load.
    """

    store: ReplicaQueries

    def __init__(
        self,
        store: ReplicaQueries,
        *,
        holder: str,
        lease: float = 30.0,
        poll: float = 0.25,
        concurrency: int = 256,
    ) -> None:
        super().__init__(store, concurrency=concurrency)
        self.holder = holder
        self.lease = lease
        self.poll = poll
        self._capacity = concurrency
        self._wake = asyncio.Event()
        self._inflight: dict[int, tuple[int, asyncio.Task[None]]] = {}
        """Update id: the claim number it is worked on under, and the task doing it."""
        self._loops: list[asyncio.Task[None]] = []

    async def start(self) -> int:
        """Start claiming; returns how many stored updates wait (on any replica)."""
        self._accepting = True
        await self.prune()
        self._pruner = asyncio.create_task(self._prune_periodically(), name="inbox:prune")
        self._loops = [
            asyncio.create_task(self._claim_loop(), name="inbox:claim"),
            asyncio.create_task(self._renew_loop(), name="inbox:renew"),
        ]
        return await self.store.inbox_pending_count()

    def submit(self, item: InboxItem) -> None:
        """An update was stored here: claim it (or let another replica) without waiting."""
        if self._accepting:
            self._idle.clear()  # until it is claimed and done, here or elsewhere
            self._wake.set()

    async def hold(self, item: InboxItem) -> None:
        """Before a reply for `item`: raise ClaimLost unless its claim still holds.

        The database decides (a statement that also extends the lease); the local check
        only saves that round trip for work already known to be lost.
        """
        working = self._inflight.get(item.id)
        if working is None or working[0] != item.claim:
            raise ClaimLost(f"update {item.id} is no longer claimed by this replica")
        attempt = current_attempt()
        if (
            attempt is not None
            and attempt.fence is not None
            and attempt.fence.item_id == item.id
            and attempt.fence.claim == item.claim
            and attempt.fenced_at is not None
            and time.monotonic() - attempt.fenced_at < FRESH_FENCE_SECONDS
        ):
            # The answer's own statement checked the claim and extended its lease a moment
            # ago: the database decided, for this one send.
            attempt.fenced_at = None
            return
        if not await self.store.inbox_fence(self.holder, item.id, item.claim, self.lease):
            raise ClaimLost(f"update {item.id} was claimed by another replica")

    def _fence(self, item: InboxItem) -> int | None:
        return item.claim

    def _claim_fence(self, item: InboxItem) -> ClaimFence | None:
        return ClaimFence(self.holder, item.id, item.claim, self.lease)

    async def _claim_loop(self) -> None:
        while self._accepting:
            self._wake.clear()
            batch = min(self._capacity - len(self._inflight), 64)
            items: list[InboxItem] = []
            if batch > 0 and self.handlers:
                try:
                    items = await self.store.inbox_claim(
                        self.holder, self.lease, channels=sorted(self.handlers), limit=batch
                    )
                except StoreError as exc:
                    log.warning("claiming stored updates failed (%s); trying again", exc)
            for item in items:
                self._idle.clear()
                stale = self._inflight.get(item.id)
                if stale is not None:  # this replica lost it, then claimed it again
                    stale[1].cancel()
                task = asyncio.create_task(
                    self._work(item), name=f"inbox:{item.channel}:{item.chat_key}"
                )
                self._inflight[item.id] = (item.claim, task)
            if items and len(items) == batch:
                continue  # there may be more right away
            if not self._inflight and not self._wake.is_set():
                self._idle.set()  # nothing here, nor anything stored since the claim
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.poll)

    async def _work(self, item: InboxItem) -> None:
        try:
            await self._process(item)
        finally:
            working = self._inflight.get(item.id)
            if working is not None and working[0] == item.claim:
                del self._inflight[item.id]
            if not self._inflight:
                self._idle.set()
            self._wake.set()  # the chat's next update may be claimable now

    async def _renew_loop(self) -> None:
        every = self.lease / 4
        while True:
            started = time.monotonic()
            await asyncio.sleep(every)
            late = time.monotonic() - started - every
            if late > every:
                log.warning(
                    "the event loop stalled for %.1f s; checking the inbox claims", late + every
                )
            try:
                await self.renew()
            except StoreError as exc:
                log.warning("renewing inbox claims failed (%s); trying again", exc)

    async def renew(self) -> list[int]:
        """Extend the leases of the work in flight; cancel the work whose claim is gone.

        Returns the ids of the updates whose work was cancelled.
        """
        claims = sorted((item_id, claim) for item_id, (claim, _) in self._inflight.items())
        if not claims:
            return []
        kept = set(await self.store.inbox_renew(self.holder, claims, self.lease))
        lost = []
        for item_id, claim in claims:
            working = self._inflight.get(item_id)
            if item_id in kept or working is None or working[0] != claim:
                continue  # renewed, or finished (or claimed anew) meanwhile
            if working[1].done():
                continue
            working[1].cancel()
            lost.append(item_id)
        if lost:
            log.warning(
                "lost the claim on update(s) %s (another replica took them over):"
                " stopped working on them",
                lost,
            )
        return lost

    async def stop(self, timeout: float = 10.0) -> None:
        """Stop claiming, let answers in flight finish within `timeout`, give back the rest."""
        self._accepting = False
        self._wake.set()
        claim_loop, renew_loop = self._loops or (None, None)
        if claim_loop is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await claim_loop
        if self._pruner is not None:
            await cancel_and_wait(self._pruner)
            self._pruner = None
        unfinished = await finish([task for _, task in self._inflight.values()], timeout)
        if unfinished:
            log.warning(
                "stopped with %d update(s) unfinished; another replica takes them", unfinished
            )
        await cancel_and_wait(renew_loop)
        self._loops = []
        with contextlib.suppress(StoreError):
            await self.store.inbox_release(self.holder)


@contextlib.asynccontextmanager
async def startup_lock(
    store: SynthesisQueries, holder: str, *, wait: float = 120.0, lease: float = 120.0
) -> AsyncIterator[None]:
    """Hold the start-up lease: one replica at a time repairs, checks and registers."""
    deadline = time.monotonic() + wait
    while not await store.acquire_lock(STARTUP_LOCK, holder, time.time(), lease):
        if time.monotonic() > deadline:
            raise StoreError(f"another replica has been starting for over {wait:.0f} s")
        await asyncio.sleep(0.2)
    try:
        yield
    finally:
        with contextlib.suppress(StoreError):
            await store.release_lock(STARTUP_LOCK, holder)


def volume_marker(skills_dir: Path) -> str | None:
    """The volume id written in this skills folder, if any."""
    marker = skills_dir / VOLUME_MARKER
    return marker.read_text(encoding="utf-8").strip() if marker.is_file() else None


async def check_skills_volume(store: RegistryQueries, skills_dir: Path) -> str:
    """Make sure this replica's skills folder is the one every replica shares.

    The first replica writes a random id into the folder and the database. A later
    replica that finds the database's id but not the file is looking at another
    folder (a volume not mounted, or one per host): it must not start, since the
    skills it showed and the proposals it promoted would differ from the others'.
    Call it under `startup_lock`. Returns the volume id.
    """
    stored = await store.get_meta(VOLUME_KEY)
    found = volume_marker(skills_dir)
    if stored is None:
        volume = found or secrets.token_hex(16)
        skills_dir.mkdir(parents=True, exist_ok=True)
        if found is None:
            (skills_dir / VOLUME_MARKER).write_text(volume + "\n", encoding="utf-8")
        await store.set_meta(VOLUME_KEY, volume)
        return volume
    if found != stored:
        what = "has no" if found is None else "has another"
        raise ConfigError(
            f"{skills_dir} {what} {VOLUME_MARKER} file: it is not the skills volume the other"
            f" replicas share. Mount the shared volume at SKILLGATE_DATA_DIR (see"
            f" docs/SCALING.md); a folder restored from a backup gets its {VOLUME_MARKER} back"
            f" with it."
        )
    return stored


class RegistryWatcher:
    """Reloads this replica's skills when the registry changes on any replica."""

    def __init__(
        self, store: ReplicaQueries, reload: Callable[[], Awaitable[None]], every: float = 2.0
    ) -> None:
        self.store = store
        self.reload = reload
        self.every = every
        self._seen: str | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._seen = await self.store.skills_fingerprint()
        self._task = asyncio.create_task(self._watch(), name="registry:watch")

    async def check(self) -> bool:
        """Reload if the registry changed since last seen; True when it did."""
        now = await self.store.skills_fingerprint()
        if now == self._seen:
            return False
        await self.reload()
        self._seen = now
        return True

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self.every)
            try:
                if await self.check():
                    log.info("skills changed on another replica: reloaded")
            except StoreError as exc:
                log.warning("watching the skill registry failed: %s", exc)
            except Exception:
                log.exception("reloading skills failed")

    async def stop(self) -> None:
        if self._task is not None:
            await cancel_and_wait(self._task)
            self._task = None
