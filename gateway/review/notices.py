"""The repeat notice of a pass, to every admin of every channel: once each, after any crash.

A pass that suppressed repeats of standing rejections wrote its notice with its run
(`gateway.store.notices`). `RepeatNotices.sync` sends each notice not every admin has
got: the card work's background task runs it after each pass, at start-up and every few
minutes, so a notice a crash left unsent goes out at the next start or the next pass,
and a claimed copy is never sent twice. A notice older than `MAX_AGE` is no longer sent
(an admin added later does not get last month's news).

A digest, not a stream: a rejection is named in at most one notice a day (its later
returns that day are counted, quietly, and the next notice naming it counts them), and
one admin gets at most `per_day` notices in 24 hours (SKILLGATE_REPEAT_NOTICES_PER_DAY);
the others wait for a later sync, while younger than `MAX_AGE`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from gateway.errors import ChannelError
from gateway.i18n import ENGLISH, Texts
from gateway.review.repeats import NoticeView, RepeatNotice

log = logging.getLogger(__name__)

DAY = 86400.0
MAX_AGE = 3 * DAY
"""Seconds after its pass during which a notice is still sent."""


class NoticeTransport(Protocol):
    """How one channel shows a repeat notice to its admins (the card transports do)."""

    channel: str

    def admins(self) -> Sequence[str]:
        """Chat ids of the admins' private chats."""
        ...

    async def send_repeats(self, chat_id: str, notice: RepeatNotice, texts: Texts) -> str | None:
        """Send the notice with its signed buttons; the platform's message id if known."""
        ...


class NoticeStore(Protocol):
    """What delivering repeat notices reads and writes (`gateway.store.notices`)."""

    async def unsent_repeat_notices(self, since: float) -> list[RepeatNotice]: ...

    async def claim_notice(
        self, notice_id: int, channel: str, chat_id: str, *, retake_before: float, now: float
    ) -> bool: ...

    async def notice_delivered(
        self, notice_id: int, channel: str, chat_id: str, message_id: str | None, at: float
    ) -> None: ...

    async def notice_sent(self, notice_id: int, at: float) -> None: ...

    async def notices_delivered_to(self, channel: str, chat_id: str, since: float) -> int: ...


class Language(Protocol):
    """The language of an admin's private chat."""

    async def __call__(self, channel: str, chat_id: str) -> Texts: ...


class RepeatNotices:
    """Sends each pass's repeat notice to every admin once."""

    def __init__(
        self,
        store: NoticeStore,
        transports: Mapping[str, NoticeTransport],
        *,
        language: Language | None = None,
        retake_after: float,
        clock: Callable[[], float] = time.time,
        per_day: int = 3,
    ) -> None:
        self.per_day = per_day
        """Notices one admin gets in 24 hours at most."""
        self.store = store
        self.transports = transports
        self.language = language
        self.retake_after = retake_after
        self.clock = clock

    async def sync(self) -> None:
        """Send every recent notice to each admin who lacks it."""
        for notice in await self.store.unsent_repeat_notices(self.clock() - MAX_AGE):
            if await self.deliver(notice):
                await self.store.notice_sent(notice.id, self.clock())

    async def deliver(self, notice: RepeatNotice) -> bool:
        """Send one notice to each admin who has not got it; True when every admin has it."""
        complete = True
        for transport in self.transports.values():
            for chat_id in transport.admins():
                now = self.clock()
                got = await self.store.notices_delivered_to(transport.channel, chat_id, now - DAY)
                if got >= self.per_day:
                    complete = False  # this admin's cap for the day: it waits
                    log.info(
                        "repeat notice of run %d to %s admin %s waits: %d sent in 24 hours",
                        notice.run_id,
                        transport.channel,
                        chat_id,
                        got,
                    )
                    continue
                if not await self.store.claim_notice(
                    notice.id,
                    transport.channel,
                    chat_id,
                    retake_before=now - self.retake_after,
                    now=now,
                ):
                    continue  # delivered already, or another process is sending it
                texts = ENGLISH
                if self.language is not None:
                    texts = await self.language(transport.channel, chat_id)
                try:
                    message_id = await transport.send_repeats(chat_id, notice, texts)
                except ChannelError as exc:
                    # The claim stays; after `retake_after` a sync sends it again.
                    complete = False
                    log.warning(
                        "repeat notice of run %d to %s admin %s failed: %s",
                        notice.run_id,
                        transport.channel,
                        chat_id,
                        exc,
                    )
                    continue
                await self.store.notice_delivered(
                    notice.id, transport.channel, chat_id, message_id, self.clock()
                )
                log.info(
                    "repeat notice of run %d sent to %s admin %s",
                    notice.run_id,
                    transport.channel,
                    chat_id,
                )
        return complete


__all__ = ["NoticeStore", "NoticeTransport", "NoticeView", "RepeatNotices"]
