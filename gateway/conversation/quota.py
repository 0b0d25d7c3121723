"""Daily quotas: per user, per group chat and for the whole gateway, checked before the model.

An answer is admitted in the transaction that opens its turn, which raises every count
it falls under (`gateway.store.usage.admit`), so the limits hold across restarts and
replicas. Over a limit,
the user gets one notice saying when the counts reset (UTC midnight), the model is not
called, and the admins are told once that day. Admins are never refused. An answer's
tokens and cost, which it carries from the model, are added in the transaction that
stores it; a failed answer gives its count back.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from gateway.config import QuotaSettings
from gateway.conversation.ports import Alerts, QuotaStore
from gateway.core.models import ChatRef, IncomingMessage
from gateway.core.records import OpenedTurn, QuotaCheck
from gateway.core.turn import Admission, QuotaSpend, Spender, Usage
from gateway.i18n import ENGLISH, N_, Texts
from gateway.usage import cost_of, next_reset, subjects, utc_day

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


def checks(quotas: QuotaSettings, chat: ChatRef) -> list[QuotaCheck]:
    """The limits an answer in `chat` counts under (its user, its group, the gateway)."""
    found = []
    for scope, subject in subjects(chat.channel, chat.chat_id, chat.user_id, chat.is_group):
        if scope == "user":
            check = QuotaCheck(scope, subject, quotas.user_answers, quotas.user_tokens)
        elif scope == "chat":
            check = QuotaCheck(scope, subject, quotas.chat_answers, quotas.chat_tokens)
        else:
            check = QuotaCheck(scope, subject, None, quotas.gateway_tokens, quotas.gateway_cost)
        if check.answers is not None or check.tokens is not None or check.cost is not None:
            found.append(check)
    return found


def until_reset(now: float, texts: Texts = ENGLISH) -> str:
    left = max(0, int(next_reset(now) - now))
    return texts(IN_TIME, hours=left // 3600, minutes=left % 3600 // 60)


@dataclass(frozen=True)
class Refusal:
    """An answer refused by a daily limit: which limit, and the notice to give instead."""

    scope: str
    notice: str


class Quotas:
    """The daily limits of one gateway, for every channel alike."""

    def __init__(
        self,
        settings: QuotaSettings,
        store: QuotaStore,
        *,
        alerts: Alerts | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.prices = settings.prices()
        """LLM_PRICES, read once."""
        self.store = store
        self.alerts = alerts
        self.clock = clock

    def admission(self, chat: ChatRef, *, admin: bool) -> Admission | None:
        """The counts a new answer in `chat` raises when its turn opens; None: no limit applies."""
        if admin or not self.settings.limited:
            return None
        return Admission(utc_day(self.clock()), tuple(checks(self.settings, chat)))

    async def admit_now(
        self, chat: ChatRef, inbox_id: int | None, *, admin: bool, texts: Texts = ENGLISH
    ) -> Admission | Refusal | None:
        """Count an answer ahead of its turn (a voice note or file is admitted before it is
        downloaded or transcribed), or the refusal to give instead; None: no limit applies.
        An update resumed after a crash was counted when its message was first stored."""
        admission = self.admission(chat, admin=admin)
        if admission is None:
            return None
        if inbox_id is not None and await self.store.message_for_inbox(inbox_id, "user"):
            return Admission(admission.day)
        over = await self.store.quota_admit(admission.day, admission.checks)
        return admission if over is None else await self.refuse(over, texts)

    async def give_back(self, admission: Admission | None) -> None:
        """An answer admitted ahead of its turn that was never made (a notice answered)."""
        if admission is not None and admission.checks:
            counts = [(c.scope, c.subject, -1) for c in admission.checks]
            await self.store.quota_spend(admission.day, counts, tokens=0, cost=0.0)

    def spender(
        self, incoming: IncomingMessage, turn: OpenedTurn, admission: Admission | None
    ) -> Spender | None:
        """What the answer of `turn` adds to the counts: its tokens and cost (an admin's too),
        speech-to-text's minutes included; a failed answer gives back the count it raised."""
        if not self.settings.limited:
            return None
        chat = incoming.chat
        # Speech-to-text was paid for whatever became of the answer: its minutes count too.
        speech = sum(a.duration or 0.0 for a in incoming.attachments if a.sent_as == "transcript")
        speech_cost = speech / 60 * self.settings.stt_price_per_minute
        day = admission.day if admission is not None else utc_day(self.clock())
        raised = set()
        if admission is not None and not turn.resumed:
            raised = {(c.scope, c.subject) for c in admission.checks}
        prices = self.prices

        def spend(usage: Usage) -> QuotaSpend:
            back = -1 if usage.kind == "error" else 0
            counts = tuple(
                (scope, subject, back if (scope, subject) in raised else 0)
                for scope, subject in subjects(
                    chat.channel, chat.chat_id, chat.user_id, chat.is_group
                )
            )
            prompt, completion = usage.prompt_tokens, usage.completion_tokens
            cost = (cost_of(prices, usage.model, prompt, completion) or 0.0) + speech_cost
            return QuotaSpend(day, counts, prompt + completion, cost)

        return spend

    async def refuse(self, over: QuotaCheck, texts: Texts = ENGLISH) -> Refusal:
        """The notice (in `texts`) for an answer a daily limit refused; the admins are told."""
        now = self.clock()
        log.info("daily %s limit reached for %s", over.scope, over.subject or "the gateway")
        await self._alert(utc_day(now), over)
        return Refusal(over.scope, texts(NOTICES[over.scope], reset=until_reset(now, texts)))

    async def _alert(self, day: str, over: QuotaCheck) -> None:
        """Tell the admins once a day per scope: a user spending their own limit first must
        not keep them from hearing that a chat's, or the whole gateway's, ran out."""
        if self.alerts is None:
            return
        if not await self.store.quota_first(day, f"admins-told:{over.scope}"):
            return
        try:
            await self.alerts(ALERTS[over.scope], f"quota:{over.scope}:{day}", subject=over.subject)
        except Exception:
            log.exception("telling the admins about the daily limit failed")
