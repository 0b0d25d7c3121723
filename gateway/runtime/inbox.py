"""The inbox worker: stored updates processed in order per chat, concurrently across chats.

The database is the queue; the in-memory deques only mirror its unprocessed
rows, so a restart resumes exactly what was not finished. A failing update is
retried with backoff (holding back its chat, to keep order) and, after
`max_attempts`, set aside with its error so the chat is not blocked forever.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from functools import partial
from typing import Protocol, TypeVar

from gateway.core.records import ClaimFence, InboxItem
from gateway.core.tasks import cancel_and_wait
from gateway.errors import ClaimLost, StoreBusy, StoreError
from gateway.store.inbox import PRUNE_CHUNK, InboxQueries

log = logging.getLogger(__name__)

Handler = Callable[[InboxItem], Awaitable[None]]

RETENTION_SECONDS = 7 * 86400
"""Processed updates are kept this long to recognise redeliveries (Telegram keeps 24 h)."""
PRUNE_EVERY_SECONDS = 6 * 3600
T = TypeVar("T")


class Received(Protocol):
    """Where stored updates are counted (/metrics)."""

    def received(self, channel: str) -> None: ...


@dataclass
class Attempt:
    """One attempt at an update, in its own task: what its answer left for the update's done
    and, with replicas, the claim it works under.

    The channel's write after an answer's last message (`AnswerLog.settle_platform_ids`)
    waits here for the update's done: one write where there were two. If the attempt ends
    any other way, it is written before the attempt's end is (`InboxWorker._attempt`). A
    crash in between loses it as a crash between the send and the write always did: the
    retry sends that last message again.
    """

    task: asyncio.Task[object] | None
    answer_ids: tuple[int, list[str]] | None = None
    write: Callable[[int, Sequence[str]], Awaitable[None]] | None = None
    open: bool = True
    fence: ClaimFence | None = None
    """The claim the attempt works under (replicas): the answer's statement checks it."""
    fenced_at: float | None = None
    """When (monotonic) the answer's statement found the claim held and extended it."""


ATTEMPT: ContextVar[Attempt | None] = ContextVar("inbox_attempt", default=None)
"""The attempt the current task works on, where the inbox worker started it."""


def current_attempt() -> Attempt | None:
    """The inbox worker's attempt this very task works on, if any."""
    work = ATTEMPT.get()
    if work is None or not work.open or work.task is not asyncio.current_task():
        return None
    return work


def settle_later(
    message_id: int, ids: Sequence[str], write: Callable[[int, Sequence[str]], Awaitable[None]]
) -> bool:
    """Leave the write of an answer's ids to the update's done; False where no attempt of
    the inbox worker runs in this very task (a task it spawned, a scheduled delivery)."""
    work = current_attempt()
    if work is None:
        return False
    work.answer_ids = (message_id, list(ids))
    work.write = write
    return True


class Inbox:
    """The door of the durable inbox: an update is stored, counted, then queued."""

    def __init__(self, store: InboxQueries, worker: InboxWorker, counts: Received) -> None:
        self.store = store
        self.worker = worker
        self.counts = counts

    async def accept(self, channel: str, update_id: str, chat_key: str, payload: str) -> bool:
        """Store an update durably and queue it; False when it is a redelivery."""
        item = await self.store.inbox_add(channel, update_id, chat_key, payload)
        if item is None:
            return False
        self.counts.received(channel)
        self.worker.submit(item)
        return True


class InboxWorker:
    """Drains the inbox through the channels' handlers."""

    def __init__(
        self,
        store: InboxQueries,
        *,
        max_attempts: int = 5,
        concurrency: int = 256,
        backoff: Callable[[int], float] = lambda attempt: min(30.0, 0.5 * 2 ** (attempt - 1)),
    ) -> None:
        self.store = store
        self.handlers: dict[str, Handler] = {}
        self.max_attempts = max_attempts
        self.backoff = backoff
        self._limit = asyncio.Semaphore(concurrency)
        self._queues: dict[str, deque[InboxItem]] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._idle = asyncio.Event()
        self._idle.set()
        self._accepting = False
        self._pruner: asyncio.Task[None] | None = None

    async def start(self) -> int:
        """Resume every unprocessed update stored before; returns how many."""
        self._accepting = True
        await self.prune()
        self._pruner = asyncio.create_task(self._prune_periodically(), name="inbox:prune")
        pending = [i for i in await self.store.inbox_pending() if i.channel in self.handlers]
        for item in pending:
            self.submit(item)
        if pending:
            log.info("resuming %d stored update(s)", len(pending))
        return len(pending)

    def submit(self, item: InboxItem) -> None:
        """Queue a stored update behind the others of its chat."""
        if not self._accepting:
            return  # it is on disk; the next start resumes it
        key = f"{item.channel}:{item.chat_key}"
        queue = self._queues.setdefault(key, deque())
        if any(queued.id == item.id for queued in queue):
            return  # accepted live while `start` was reading it back from the inbox
        queue.append(item)
        if key not in self._tasks:
            self._idle.clear()
            self._tasks[key] = asyncio.create_task(self._drain(key), name=f"inbox:{key}")

    async def _drain(self, key: str) -> None:
        queue = self._queues[key]
        try:
            while queue:
                await self._process(queue[0])
                queue.popleft()
        finally:
            self._tasks.pop(key, None)
            if not queue:
                self._queues.pop(key, None)
            if not self._tasks:
                self._idle.set()

    async def hold(self, item: InboxItem) -> None:
        """One process holds every update it stores: nothing can take one over."""

    def _fence(self, item: InboxItem) -> int | None:
        """The claim number the bookkeeping of `item` is fenced by (None: no claims here)."""
        return None

    def _claim_fence(self, item: InboxItem) -> ClaimFence | None:
        """The claim an answer to `item` is stored under (None: no claims here)."""
        return None

    async def _process(self, item: InboxItem) -> None:
        handler = self.handlers.get(item.channel)
        if handler is None:
            return
        claim = self._fence(item)
        # Counted before the work: an update that kills the process (the kernel's OOM
        # killer, a crash in a library) has used its attempt all the same. A new update's
        # first attempt was counted as it was stored.
        attempt = item.attempts if item.started else await self._start(item, claim)
        while True:
            if attempt == 0:
                return  # the claim is gone: the replica that holds it now retries
            if attempt > self.max_attempts:
                reason = item.last_error or "the process stopped while handling it"
                await self._give_up(handler, item, claim, attempt, reason)
                return
            work = Attempt(asyncio.current_task(), fence=self._claim_fence(item))
            try:
                await self._attempt(handler, item, work)
            except asyncio.CancelledError:
                raise
            except ClaimLost:
                log.warning(
                    "%s update %s was taken over by another replica; stopped before sending",
                    item.channel,
                    item.update_id,
                )
                return
            except StoreBusy as exc:
                # The database is locked by someone else: not this update's fault, so it
                # costs no attempt; it waits as long as the lock lasts.
                log.warning(
                    "%s update %s waits for the database: %s", item.channel, item.update_id, exc
                )
                await asyncio.sleep(self.backoff(1))
                continue
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"
                failed = partial(self.store.inbox_failed, item.id, error, claim=claim)
                if await self._persist(failed) == 0 and claim is not None:
                    return
                if attempt >= self.max_attempts:
                    await self._give_up(handler, item, claim, attempt, str(exc))
                    return
                log.warning(
                    "%s update %s failed (attempt %d), retrying: %s",
                    item.channel,
                    item.update_id,
                    attempt,
                    exc,
                )
                await asyncio.sleep(self.backoff(attempt))
                attempt = await self._start(item, claim)
                continue
            # The answer's ids its last message left go with the done: one write.
            done = partial(self.store.inbox_done, item.id, claim=claim, answer_ids=work.answer_ids)
            await self._persist(done)
            return

    async def _attempt(self, handler: Handler, item: InboxItem, work: Attempt) -> None:
        """One attempt at `item`; what its answer's last message left to write (`Attempt`)
        is written before any other end of the attempt is handled, so that a retry, here or
        on another replica, does not send that message again."""
        token = ATTEMPT.set(work)
        try:
            async with self._limit:
                await handler(item)
        except BaseException:
            work.open = False
            if work.answer_ids is not None and work.write is not None:
                message_id, ids = work.answer_ids
                work.answer_ids = None
                write = asyncio.ensure_future(work.write(message_id, ids))
                with contextlib.suppress(StoreError):  # as a failed write of it always was
                    await asyncio.shield(write)  # a cancelled attempt's write still lands
            raise
        finally:
            work.open = False
            ATTEMPT.reset(token)

    async def _start(self, item: InboxItem, claim: int | None) -> int:
        return await self._persist(partial(self.store.inbox_started, item.id, claim=claim))

    async def _give_up(
        self, handler: Handler, item: InboxItem, claim: int | None, attempt: int, reason: str
    ) -> None:
        """Hand the update on once more so that its sender is told, then set it aside.

        Told before it is set aside, while the claim still lets a replica send; an update
        whose notice itself was cut short (one more attempt counted) is set aside untold.
        """
        log.error(
            "giving up on %s update %s after %d attempts: %s",
            item.channel,
            item.update_id,
            self.max_attempts,
            reason,
        )
        if attempt <= self.max_attempts + 1:
            try:
                async with self._limit:
                    await handler(item.model_copy(update={"given_up": True}))
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("could not tell the sender of update %s: %s", item.update_id, exc)
        gave_up = partial(self.store.inbox_done, item.id, error=f"gave up: {reason}", claim=claim)
        await self._persist(gave_up)

    async def _persist(self, write: Callable[[], Awaitable[T]]) -> T:
        """A bookkeeping write, retried while the database refuses it (locked, busy).

        Giving up would end the chat's queue with the update still unprocessed on disk, to
        be found again only by the chat's next message or a restart.
        """
        failures = 0
        while True:
            try:
                return await write()
            except StoreError as exc:
                failures += 1
                delay = self.backoff(failures)
                log.warning("inbox bookkeeping failed (%s); retrying in %.1f s", exc, delay)
                await asyncio.sleep(delay)

    async def wait_idle(self, timeout: float | None = None) -> None:
        """Wait until every queued update is processed."""
        await asyncio.wait_for(self._idle.wait(), timeout)

    async def prune(self, now: float | None = None) -> int:
        """Forget processed updates older than the retention; the dedupe table stays small."""
        at = time.time() if now is None else now
        gone = 0
        while (n := await self.store.inbox_prune(at - RETENTION_SECONDS, PRUNE_CHUNK)) > 0:
            gone += n  # a chunk per unit of work: answers are stored between them
            if n < PRUNE_CHUNK:
                break
        if gone:
            log.info(
                "pruned %d processed update(s) older than %d days", gone, RETENTION_SECONDS // 86400
            )
        return gone

    async def _prune_periodically(self) -> None:
        while True:
            await asyncio.sleep(PRUNE_EVERY_SECONDS)
            try:
                await self.prune()
            except StoreError as exc:  # a busy database: try again next time
                log.warning("pruning the inbox failed: %s", exc)

    async def stop(self, timeout: float = 10.0) -> None:
        """Stop taking work, let in-flight updates finish within `timeout`, cancel the rest."""
        self._accepting = False
        if self._pruner is not None:
            await cancel_and_wait(self._pruner)
            self._pruner = None
        for queue in self._queues.values():
            while len(queue) > 1:  # keep only the update in flight; the rest stay on disk
                queue.pop()
        unfinished = await finish(list(self._tasks.values()), timeout)
        if unfinished:
            log.warning("stopped with %d chat(s) unfinished; they resume at next start", unfinished)


async def finish(tasks: list[asyncio.Task[None]], timeout: float) -> int:
    """Let `tasks` finish within `timeout`, cancel the rest; returns how many were cancelled."""
    if not tasks:
        return 0
    _done, pending = await asyncio.wait(tasks, timeout=timeout)
    await cancel_and_wait(*pending)
    return len(pending)
