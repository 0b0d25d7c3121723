"""Daily quotas: per user, per group chat and for the whole gateway, checked before the model.

An answer is admitted by one database transaction that raises every count it falls
under (`quota_admit`), so the limits hold across restarts and replicas. Over a limit,
the user gets one notice saying when the counts reset (UTC midnight), the model is not
called, and the admins are told once that day. Admins are never refused. An answer's
tokens and cost are added once it is stored; a failed answer gives its count back.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from gateway.conversation.ports import QuotaStore
from gateway.core.models import IncomingMessage, Reply
from gateway.core.records import QuotaCheck
from gateway.i18n import ENGLISH, N_, Texts
from gateway.usage import Prices, cost_of, next_reset, subjects, utc_day

log = logging.getLogger(__name__)

USER_LIMIT = N_(
    "You have reached today's limit of answers for you. It resets at 00:00 UTC, {reset}."
)
CHAT_LIMIT = N_("This chat has reached today's limit of answers. It resets at 00:00 UTC, {reset}.")
GATEWAY_LIMIT = N_(
    "I have used up today's answer budget for everyone. It resets at 00:00 UTC, {reset}."
)
IN_TIME = N_("in {hours} h {minutes} min")
NOTICES = {"user": USER_LIMIT, "chat": CHAT_LIMIT, "gateway": GATEWAY_LIMIT}
ALERTS = {
    "user": N_(
        "Daily limit reached by a user ({subject}): their answers wait until 00:00 UTC."
        " Admins are exempt. You are told once a day."
    ),
    "chat": N_(
        "Daily limit reached by a group chat ({subject}): its answers wait until 00:00 UTC."
        " Admins are exempt. You are told once a day."
    ),
    "gateway": N_(
        "The gateway's daily budget is used up: answers wait until 00:00 UTC."
        " Admins are exempt. You are told once a day."
    ),
}
"""What the admins are told, in each admin's language, the first time a day a limit is hit."""


class Alerts(Protocol):
    """Tell every admin a fixed text (translated for each); `ref` keeps a retried push single."""

    async def __call__(self, message: str, ref: str, /, **values: object) -> None: ...


@dataclass(frozen=True)
class Limits:
    """The daily limits from the settings; None is no limit."""

    user_answers: int | None = None
    user_tokens: int | None = None
    chat_answers: int | None = None
    chat_tokens: int | None = None
    gateway_tokens: int | None = None
    gateway_cost: float | None = None
    prices: Prices = field(default_factory=dict)
    stt_per_minute: float = 0.0
    """What a minute of transcribed speech costs (STT_PRICE_PER_MINUTE)."""

    @property
    def active(self) -> bool:
        return any(
            v is not None
            for v in (
                self.user_answers,
                self.user_tokens,
                self.chat_answers,
                self.chat_tokens,
                self.gateway_tokens,
                self.gateway_cost,
            )
        )

    def checks(self, incoming: IncomingMessage) -> list[QuotaCheck]:
        chat = incoming.chat
        found = []
        for scope, subject in subjects(chat.channel, chat.chat_id, chat.user_id, chat.is_group):
            if scope == "user":
                check = QuotaCheck(scope, subject, self.user_answers, self.user_tokens)
            elif scope == "chat":
                check = QuotaCheck(scope, subject, self.chat_answers, self.chat_tokens)
            else:
                check = QuotaCheck(scope, subject, None, self.gateway_tokens, self.gateway_cost)
            if check.answers is not None or check.tokens is not None or check.cost is not None:
                found.append(check)
        return found


def until_reset(now: float, texts: Texts = ENGLISH) -> str:
    left = max(0, int(next_reset(now) - now))
    return texts(IN_TIME, hours=left // 3600, minutes=left % 3600 // 60)


@dataclass(frozen=True)
class Admission:
    """An admitted answer: the day it counts on, and the counts it was admitted under."""

    day: str
    counted: tuple[tuple[str, str], ...] = ()
    spends: bool = True
    """False when the answer was made (and spent) before a crash stopped its delivery."""


@dataclass(frozen=True)
class Refusal:
    """An answer refused by a daily limit: which limit, and the notice to give instead."""

    scope: str
    notice: str


class Quotas:
    """The daily limits of one gateway, for every channel alike."""

    def __init__(
        self,
        limits: Limits,
        store: QuotaStore,
        *,
        alerts: Alerts | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.limits = limits
        self.store = store
        self.alerts = alerts
        self.clock = clock

    async def admit(
        self, incoming: IncomingMessage, *, admin: bool, texts: Texts = ENGLISH
    ) -> Admission | Refusal:
        """Count the answer about to be made, or the notice (in `texts`) to give instead."""
        now = self.clock()
        day = utc_day(now)
        if admin or not self.limits.active:
            return Admission(day)
        inbox_id = incoming.inbox_id
        if inbox_id is not None and await self.store.message_for_inbox(inbox_id, "user"):
            # Resumed after a crash: counted before, and spent too if it was answered.
            answered = await self.store.message_for_inbox(inbox_id, "assistant")
            return Admission(day, spends=answered is None)
        checks = self.limits.checks(incoming)
        over = await self.store.quota_admit(day, checks)
        if over is None:
            return Admission(day, tuple((c.scope, c.subject) for c in checks))
        log.info("daily %s limit reached for %s", over.scope, over.subject or "the gateway")
        await self._alert(day, over)
        return Refusal(over.scope, texts(NOTICES[over.scope], reset=until_reset(now, texts)))

    async def give_back(self, admission: Admission) -> None:
        """An admitted answer that was never made (its attachment got a notice instead)."""
        if self.limits.active and admission.counted:
            counts = [(scope, subject, -1) for scope, subject in admission.counted]
            await self.store.quota_spend(admission.day, counts, tokens=0, cost=0.0)

    async def spend(self, incoming: IncomingMessage, admission: Admission, reply: Reply) -> None:
        """Add the stored answer's tokens and cost; a failed answer gives its count back."""
        if not self.limits.active or not admission.spends or reply.message_id is None:
            return
        trace = await self.store.get_trace(reply.message_id)
        tokens = 0 if trace is None else trace.prompt_tokens + trace.completion_tokens
        cost = 0.0
        if trace is not None:
            cost = (
                cost_of(
                    self.limits.prices, trace.model, trace.prompt_tokens, trace.completion_tokens
                )
                or 0.0
            )
        # Speech-to-text was paid for whatever became of the answer: its minutes count too.
        speech = sum(a.duration or 0.0 for a in incoming.attachments if a.sent_as == "transcript")
        cost += speech / 60 * self.limits.stt_per_minute
        back = -1 if reply.kind == "error" else 0
        chat = incoming.chat
        counts = [
            (scope, subject, back if (scope, subject) in admission.counted else 0)
            for scope, subject in subjects(chat.channel, chat.chat_id, chat.user_id, chat.is_group)
        ]
        await self.store.quota_spend(admission.day, counts, tokens=tokens, cost=cost)

    async def _alert(self, day: str, over: QuotaCheck) -> None:
        if self.alerts is None or not await self.store.quota_first(day, "admins-told"):
            return
        try:
            await self.alerts(ALERTS[over.scope], f"quota:{day}", subject=over.subject)
        except Exception:
            log.exception("telling the admins about the daily limit failed")
