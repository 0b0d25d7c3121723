"""Getting messages to a LINE chat: the event's reply token first, then push with a durable key.

A reply token is free but single-use and short-lived (about a minute), so it is
skipped for redeliveries and for answers that took too long. Everything else
goes by push, whose retry key is stored before the call: a retry after a crash
reuses it and LINE answers 409 instead of sending twice. Batches already
accepted are recorded and never sent again.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gateway.channels.api import Button, DeliveryLog
from gateway.channels.line.client import (
    MAX_MESSAGES_PER_CALL,
    LineClient,
    LineMessage,
    PushQuotaExhausted,
    ReplyTokenRejected,
    text_messages,
)

log = logging.getLogger(__name__)

CHANNEL = "line"
REPLY_TOKEN_MAX_AGE = 50.0
"""Seconds after the event when the reply token is no longer trusted (LINE allows about 60)."""
QUOTA_META = "line.push_quota_exhausted_at"


@dataclass
class EventContext:
    """The webhook event being handled, whose reply token may carry the first messages."""

    event_id: str
    reply_token: str | None
    timestamp: float
    redelivery: bool
    sends: int = 0

    def take_reply_token(self, now: float, max_age: float) -> str | None:
        """The token if it may still work; single-use, so taking it spends it."""
        token, self.reply_token = self.reply_token, None
        if token is None or self.redelivery or now - self.timestamp > max_age:
            return None
        return token

    def next_ref(self) -> str:
        """A delivery reference for the event's next notice, the same on every retry."""
        self.sends += 1
        return f"event:{self.event_id}:{self.sends}"


class LineOutbox:
    """Delivers message batches in order, skipping those LINE accepted, and tracks the quota."""

    def __init__(
        self,
        client: LineClient,
        store: DeliveryLog,
        *,
        clock: Callable[[], float] = time.time,
        reply_max_age: float = REPLY_TOKEN_MAX_AGE,
    ) -> None:
        self.client = client
        self.store = store
        self.clock = clock
        self.reply_max_age = reply_max_age
        self.quota_exhausted_since: float | None = None

    async def load(self) -> None:
        """Read the remembered push-quota state."""
        value = await self.store.get_meta(QUOTA_META)
        self.quota_exhausted_since = float(value) if value else None

    async def deliver(
        self,
        to: str,
        texts: Sequence[str],
        buttons: Sequence[Button],
        ref: str,
        event: EventContext | None = None,
        *,
        answer: int | None = None,
        fresh: bool = False,
    ) -> list[str]:
        """Send texts (buttons on the last) to a user, group or room; returns LINE message ids."""
        messages = text_messages(texts, buttons)
        return await self.deliver_messages(to, messages, ref, event, answer=answer, fresh=fresh)

    async def deliver_messages(
        self,
        to: str,
        messages: Sequence[LineMessage],
        ref: str,
        event: EventContext | None = None,
        *,
        answer: int | None = None,
        fresh: bool = False,
    ) -> list[str]:
        """Send any LINE messages in order, by the reply token of `event` first if given.

        A reply token answers the chat the event came from, so a message for any other
        chat (a card for an admin) is pushed: it is given no event. The ids of what was
        sent for an `answer` (a stored message id) are kept on it as each batch goes out.
        A `fresh` message (a notice, or an answer stored by this very attempt) sends its
        first batch by reply token without a retry key stored before (a reply takes none),
        and records it once LINE accepted it: a token is single-use, so where an earlier
        attempt sent that batch by it, LINE refuses it now and the batch on record is found.
        """
        ids: list[str] = []
        for n, start in enumerate(range(0, len(messages), MAX_MESSAGES_PER_CALL)):
            batch = messages[start : start + MAX_MESSAGES_PER_CALL]
            sent = await self._by_reply_token(batch, event) if fresh and n == 0 else None
            if sent is None:
                record = await self.store.delivery_batch(CHANNEL, ref, n, str(uuid.uuid4()))
                if record.sent_at is not None:
                    ids.extend(record.platform_ids)
                    if event is not None:
                        event.reply_token = None  # an earlier attempt already used it
                    continue
                sent = await self._send(to, batch, record.retry_key, event)
            ids.extend(sent)
            await self.store.delivery_sent(CHANNEL, ref, n, sent, answer=answer, answer_ids=ids)
        return ids

    async def _by_reply_token(
        self, batch: Sequence[LineMessage], event: EventContext | None
    ) -> list[str] | None:
        """The batch sent with the event's reply token; None when it has none that works."""
        token = event.take_reply_token(self.clock(), self.reply_max_age) if event else None
        if token is None:
            return None
        try:
            return await self.client.reply(token, batch)
        except ReplyTokenRejected as exc:
            log.info("reply token refused, pushing instead: %s", exc)
            return None

    async def _send(
        self, to: str, batch: Sequence[LineMessage], retry_key: str, event: EventContext | None
    ) -> list[str]:
        sent = await self._by_reply_token(batch, event)
        if sent is not None:
            return sent
        try:
            ids = await self.client.push(to, batch, retry_key)
        except PushQuotaExhausted as exc:
            await self._quota_exhausted(exc)
            raise
        if self.quota_exhausted_since is not None:
            self.quota_exhausted_since = None
            await self.store.set_meta(QUOTA_META, "")
            log.info("LINE push quota is available again")
        return ids

    async def _quota_exhausted(self, exc: Exception) -> None:
        log.error(
            "LINE monthly push quota exhausted: pushed messages are refused until the quota"
            " resets or the LINE Official Account plan is upgraded; answers within a minute"
            " still go out by reply token (%s)",
            exc,
        )
        if self.quota_exhausted_since is None:
            self.quota_exhausted_since = self.clock()
            await self.store.set_meta(QUOTA_META, repr(self.quota_exhausted_since))
