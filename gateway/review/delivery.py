"""Proposal cards for the admins of every chat channel: delivered once, kept up to date.

`ReviewCards` listens to the review operations. A staged proposal is sent to
every configured admin of every channel; a decision (or a reason given later)
is shown on every copy: a platform that can edit (its spec's `Capabilities.edit`)
edits its messages; one that cannot gets a short notice, except in the chat where the
decision was made, which was answered already. The database remembers each copy (`card_deliveries`),
so a restart sends nothing twice, and `sync` at start-up (and every few
minutes) catches up with whatever a crash, an outage or another process
(`skillgate proposals approve`, `skillgate synthesize`) left behind.

A pass's repeat notice (`notices`) rides on the same work and the same syncs.

Work runs in order on one background task, so a decision never makes the web
request, the terminal command or the button press wait for the chat apps.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Protocol

from gateway.core.capabilities import Capabilities
from gateway.core.records import LanguageState
from gateway.core.tasks import cancel_and_wait
from gateway.errors import ChannelError
from gateway.i18n import ENGLISH, Texts
from gateway.review.cards import Card, Cards, CardSource, build_card
from gateway.review.notices import NoticeStore, NoticeTransport, RepeatNotices
from gateway.review.ports import CardDelivery, CardLedger, PendingProposals
from gateway.review.proposals import Proposal
from gateway.review.reviewer import Reviewer
from gateway.shell import as_typed_here

log = logging.getLogger(__name__)

RETAKE_AFTER = 120.0
"""Seconds after which a claimed but undelivered card counts as abandoned (a crash)."""
RESYNC_INTERVAL = 300.0


class CopyGone(ChannelError):
    """An admin's copy of a card can no longer be updated (deleted, or the chat is gone)."""


class CardTransport(NoticeTransport, Protocol):
    """How one channel shows cards (and repeat notices) to its admins."""

    async def send_card(self, chat_id: str, card: Card) -> str | None:
        """Send a card with its buttons; returns the platform's message id if known."""
        ...

    async def send_notice(self, chat_id: str, text: str, ref: str) -> None:
        """A plain message to an admin (`ref` keeps a retried push from arriving twice)."""
        ...

    async def edit_card(self, copy: CardDelivery, card: Card) -> None:
        """Make an admin's copy show the card as it stands; CopyGone if lost. Called only
        where the platform can edit."""
        ...

    async def look_up_language(self, user_id: str) -> str | None:
        """The admin's language as the platform tells it (None where it cannot)."""
        ...


class CardStore(CardSource, CardLedger, NoticeStore, PendingProposals, Protocol):
    """Which admin holds which copy of which card, and what each copy shows."""

    async def claim_card(
        self,
        proposal_id: int,
        channel: str,
        chat_id: str,
        *,
        retake_before: float,
        now: float | None = None,
    ) -> bool: ...

    async def card_copies_and_languages(
        self, proposal_id: int
    ) -> list[tuple[CardDelivery, LanguageState]]: ...

    async def outdated_card_copies(self) -> list[CardDelivery]: ...

    async def cards_shown(
        self,
        proposal_id: int,
        chats: Sequence[tuple[str, str]],
        status: str,
        reason: str | None,
    ) -> None: ...


class AdminLanguages(Protocol):
    """The language of each admin's private chat (`gateway.conversation.language`)."""

    async def for_admin(
        self,
        channel: str,
        chat_id: str,
        platform: CardTransport | None = None,
        state: LanguageState | None = None,
    ) -> Texts: ...


Job = Callable[[], Awaitable[None]]


class ReviewCards:
    """Sends proposal cards and keeps every copy showing the current decision."""

    def __init__(
        self,
        review: Reviewer,
        store: CardStore,
        transports: Sequence[CardTransport],
        *,
        retake_after: float = RETAKE_AFTER,
        resync_interval: float = RESYNC_INTERVAL,
        clock: Callable[[], float] = time.time,
        languages: AdminLanguages | None = None,
        capabilities: Mapping[str, Capabilities] | None = None,
    ) -> None:
        self.review = review
        self.capabilities = dict(capabilities or {})
        """Each channel's, by name (its spec's); a channel not named here edits nothing."""
        self.languages = languages
        self.store = store
        self.transports = {t.channel: t for t in transports}
        self.retake_after = retake_after
        self.resync_interval = resync_interval
        self.clock = clock
        self._jobs: asyncio.Queue[Job] = asyncio.Queue()
        self._worker: asyncio.Task[None] | None = None
        self._timer: asyncio.Task[None] | None = None
        self.notices = RepeatNotices(
            store,
            self.transports,
            language=self._language if languages is not None else None,
            retake_after=retake_after,
            clock=clock,
            per_day=review.settings.repeat_notices_per_day,
        )

    async def _language(self, channel: str, chat_id: str) -> Texts:
        assert self.languages is not None
        return await self.languages.for_admin(channel, chat_id, self.transports.get(channel))

    async def card(self, p: Proposal, texts: Texts = ENGLISH) -> Card:
        """The card of a proposal as it stands now."""
        return await build_card(p, self.review, self.store, texts)

    async def _card_for(
        self, cards: Cards, channel: str, chat_id: str, language: LanguageState | None = None
    ) -> Card:
        """The card in the language of the admin of `chat_id`; `language`: the admin's
        language state where it was read with their copy."""
        texts = ENGLISH
        if self.languages is not None:
            platform = self.transports.get(channel)
            texts = await self.languages.for_admin(channel, chat_id, platform, language)
        return await cards.card(texts)

    async def tell_admins(self, message: str, ref: str, /, **values: object) -> None:
        """A fixed text to every admin of every channel, each in their language.

        A chat that cannot be reached is logged and the others are still told.
        """
        for channel, transport in self.transports.items():
            for chat_id in transport.admins():
                texts = ENGLISH
                if self.languages is not None:
                    texts = await self.languages.for_admin(channel, chat_id, transport)
                try:
                    # A command it names, as the operator's shell runs it.
                    text = as_typed_here(texts(message, **values))
                    await transport.send_notice(chat_id, text, f"{ref}:{chat_id}")
                except ChannelError as exc:
                    log.warning("could not tell %s admin %s: %s", transport.channel, chat_id, exc)

    # ---- background work ------------------------------------------------------------------

    def on_review_event(self, kind: str, proposal: Proposal) -> None:
        """Queue the delivery of a staged card (`kind` "staged") or the update of its copies."""
        pid = proposal.id
        if kind == "staged":
            self.submit(lambda: self.deliver(pid))
        else:  # the copies show the proposal as the operation left it
            self.submit(lambda: self.show(proposal))

    def repeats_found(self) -> None:
        """A pass wrote a repeat notice: queue its delivery."""
        self.submit(self.notices.sync)

    def submit(self, job: Job) -> None:
        """Queue work for the background task (run in submission order)."""
        self._jobs.put_nowait(job)
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._work(), name="review-cards")

    async def _work(self) -> None:
        while True:
            job = await self._jobs.get()
            try:
                await job()
            except Exception:
                log.exception("updating proposal cards failed; the next sync retries")
            finally:
                self._jobs.task_done()

    def start(self, *, catch_up: bool = True) -> None:
        """Catch up now and every `resync_interval` s; without `catch_up`, only follow events."""
        if not catch_up:
            return
        self.submit(self.sync)
        if self.resync_interval > 0:
            self._timer = asyncio.create_task(self._resync(), name="review-cards:resync")

    async def _resync(self) -> None:
        while True:
            await asyncio.sleep(self.resync_interval)
            self.submit(self.sync)

    async def wait_idle(self, timeout: float | None = None) -> None:
        """Wait until every queued card job is done."""
        await asyncio.wait_for(self._jobs.join(), timeout)

    async def stop(self, timeout: float = 5.0) -> None:
        """Finish queued work (for at most `timeout` s), then stop; the next start catches up."""
        for task in (self._timer, self._worker):
            if task is None:
                continue
            if task is self._worker:
                with contextlib.suppress(TimeoutError):
                    await self.wait_idle(timeout)
            await cancel_and_wait(task)
        self._timer = self._worker = None

    # ---- the work itself ------------------------------------------------------------------

    async def sync(self) -> None:
        """Deliver every pending card an admin lacks; update every copy that is out of date."""
        for p in await self.store.pending_proposals():
            await self.deliver(p.id)
        outdated = await self.store.outdated_card_copies()
        for pid in dict.fromkeys(c.proposal_id for c in outdated):
            await self.refresh(pid)
        await self.notices.sync()

    async def deliver(self, proposal_id: int) -> None:
        """Send a pending proposal's card to each admin who has not got it."""
        p = await self.review.get(proposal_id)
        if p.status != "pending":
            return
        cards = Cards(p, self.review, self.store)
        for transport in self.transports.values():
            for chat_id in transport.admins():
                now = self.clock()
                if not await self.store.claim_card(
                    p.id, transport.channel, chat_id, retake_before=now - self.retake_after, now=now
                ):
                    continue
                card = await self._card_for(cards, transport.channel, chat_id)
                try:
                    message_id = await transport.send_card(chat_id, card)
                except ChannelError as exc:
                    # The claim stays; after `retake_after` a sync sends it again.
                    log.warning(
                        "proposal #%d card to %s admin %s failed: %s",
                        p.id,
                        transport.channel,
                        chat_id,
                        exc,
                    )
                    continue
                await self.store.card_delivered(
                    p.id,
                    transport.channel,
                    chat_id,
                    message_id,
                    status=p.status,
                    reason=p.reason,
                    now=self.clock(),
                )
                log.info("proposal #%d card sent to %s admin %s", p.id, transport.channel, chat_id)

    async def refresh(self, proposal_id: int) -> None:
        """Show the proposal's current state on every copy that shows something else."""
        await self.show(await self.review.get(proposal_id))

    async def show(self, p: Proposal) -> None:
        """Show `p` (as read, or as a review operation returned it) on every copy that shows
        something else: one read of the copies with their admins' languages, one of what the
        card shows (built once per language), and one write of what the copies show now."""
        copies = [
            (c, language)
            for c, language in await self.store.card_copies_and_languages(p.id)
            if (c.shown_status, c.shown_reason) != (p.status, p.reason)
        ]
        if not copies:
            return
        cards = Cards(p, self.review, self.store)
        shown: list[tuple[str, str]] = []
        for copy, language in copies:
            transport = self.transports.get(copy.channel)
            if transport is None:
                continue  # that channel is not configured in this process
            card = await self._card_for(cards, copy.channel, copy.chat_id, language)
            try:
                await self._show_decision(transport, copy, card)
            except CopyGone as exc:
                log.warning("proposal #%d: the copy in %s is gone: %s", p.id, copy.chat_id, exc)
            except ChannelError as exc:
                log.warning(
                    "proposal #%d: could not update the copy in %s: %s", p.id, copy.chat_id, exc
                )
                continue
            shown.append((copy.channel, copy.chat_id))
        # Recorded together: a copy updated but not recorded (a crash) is shown again by the
        # next sync, which an edit takes as nothing new and a notice's delivery key sends once.
        if shown:
            await self.store.cards_shown(p.id, shown, p.status, p.reason)

    async def _show_decision(
        self, transport: CardTransport, copy: CardDelivery, card: Card
    ) -> None:
        """Edit the copy where the platform can; else tell the admin in a short notice."""
        if self.capabilities.get(copy.channel, NO_EDITS).edit:
            await transport.edit_card(copy, card)
            return
        p = card.proposal
        if p.decided_by == f"{copy.channel}:{copy.chat_id}":
            return  # the admin who decided in this chat was answered there
        reason = hashlib.sha256((p.reason or "").encode()).hexdigest()[:12]
        ref = f"card-notice:{p.id}:{copy.chat_id}:{p.status}:{reason}"
        await transport.send_notice(copy.chat_id, card.notice(), ref)


NO_EDITS = Capabilities()


def start_cards(
    review: Reviewer,
    store: CardStore,
    transports: Sequence[CardTransport | None],
    *,
    catch_up: bool = True,
    languages: AdminLanguages | None = None,
    capabilities: Mapping[str, Capabilities] | None = None,
) -> ReviewCards | None:
    """Cards for the transports that have admins and can push to them (told each review
    event by the subscriber `runtime.assembly` lists); None when none has."""
    can = dict(capabilities or {})
    useful = [
        t for t in transports if t is not None and t.admins() and can.get(t.channel, NO_EDITS).push
    ]
    if not useful:
        return None
    cards = ReviewCards(review, store, useful, languages=languages, capabilities=can)
    cards.start(catch_up=catch_up)
    return cards
