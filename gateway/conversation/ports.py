"""What the conversation layer needs from the outside, as protocols.

`Responder` is the one a platform implements: how to say things in the chat an
event came from. The store, the agent, the review operations and the metrics
implement the rest; app.py hands each to the layer.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import Literal, Protocol

from gateway.conversation.language import LanguageStore
from gateway.core.models import Button, ChatRef, IncomingMessage, Reply, Role
from gateway.core.records import (
    Awaiting,
    FeedbackRecord,
    Forgotten,
    MessageRecord,
    QuotaCheck,
    SessionRecord,
    SkillRecord,
    Trace,
)
from gateway.core.stream import PartialText
from gateway.core.tools import ToolAccess
from gateway.i18n import Texts
from gateway.review.cards import Card, CardReview, CardSource
from gateway.review.ports import CardLedger
from gateway.review.proposals import Proposal
from gateway.review.reviewer import Decision
from gateway.skills.effect import SkillEffect
from gateway.synthesis.synthesizer import RunSummary
from gateway.usage import UsageSource


class Responder(Protocol):
    """How a platform answers in the chat of the event being handled."""

    chat: ChatRef
    texts: Texts
    """The fixed texts in the user's language; the conversation layer sets them first."""

    @property
    def language_tag(self) -> str | None:
        """The user's language as the update itself gives it (Telegram), else None."""
        ...

    async def look_up_language(self) -> str | None:
        """Ask the platform for the user's language (LINE's profile); ChannelError if it fails."""
        ...

    async def notice(
        self, text: str, *, buttons: Sequence[Button] = (), quote: bool = False
    ) -> None:
        """Say something that is not the model's answer; `quote` replies to the message."""
        ...

    async def acknowledge(self, text: str, *, courtesy: bool = False) -> None:
        """Answer a button press; a `courtesy` may be dropped where a press needs no answer."""
        ...

    def working(self) -> AbstractAsyncContextManager[PartialText | None]:
        """Show that an answer is being written ("typing…", the loading animation).

        A platform that shows the answer as it grows yields the `PartialText` to fill;
        one that does not (or a chat where it does not) yields None.
        """
        ...

    async def deliver(self, reply: Reply) -> list[str]:
        """Send an answer with its buttons, continuing what an earlier attempt sent."""
        ...

    async def show_rating(self, answer_id: int, rating: int) -> None:
        """Show the rating on the rated answer, where the platform can."""
        ...

    async def ask_comment(self, answer_id: int) -> str | None:
        """Ask what went wrong; the prompt's id when only a reply to it is the answer."""
        ...

    async def ask_reason(self, proposal: Proposal, decided: str) -> str | None:
        """Say `decided` and ask why; the prompt's id when only a reply to it is the answer."""
        ...

    async def reviewer_name(self) -> str | None:
        """How the user who pressed is shown on cards."""
        ...

    def cards_per_listing(self, pending: int) -> int:
        """How many of `pending` proposal cards one /proposals shows."""
        ...

    async def show_cards(self, cards: Sequence[Card], more: str | None) -> list[str | None]:
        """Send cards (then `more`, if given); each card's message id where known."""
        ...

    async def show_card(self, card: Card) -> None:
        """Make the pressed card show its state now, where the platform can edit it."""
        ...

    async def send_diff(self, proposal: Proposal, diff: str) -> None:
        """The full diff of a proposal."""
        ...


class QuotaStore(Protocol):
    """The daily counts (`gateway.store.usage`), and what a turn already stored."""

    async def quota_admit(self, day: str, checks: Sequence[QuotaCheck]) -> QuotaCheck | None: ...

    async def quota_spend(
        self, day: str, counts: Sequence[tuple[str, str, int]], *, tokens: int, cost: float
    ) -> None: ...

    async def quota_first(self, day: str, flag: str) -> bool: ...

    async def message_for_inbox(self, inbox_id: int, role: Role) -> MessageRecord | None: ...

    async def get_trace(self, message_id: int) -> Trace | None: ...


class ForgetStore(Protocol):
    """Deleting everything about one user (`gateway.store.privacy`)."""

    async def forget_user(
        self,
        channel: str,
        user_id: str,
        at: float,
        *,
        meta_keys: Sequence[str] = (),
        handling: int | None = None,
    ) -> Forgotten: ...


class ConfirmStore(Protocol):
    """The stored questions (`gateway.store.tools`)."""

    async def open_confirmation(
        self,
        channel: str,
        chat_id: str,
        user_id: str,
        tool: str,
        arguments: str,
        *,
        expires_at: float,
        now: float | None = None,
    ) -> int: ...

    async def press_confirmation(
        self,
        confirmation_id: int,
        channel: str,
        user_id: str | None,
        decision: Literal["approved", "declined"],
        now: float | None = None,
    ) -> str: ...

    async def confirmation_decision(self, confirmation_id: int) -> str | None: ...

    async def expire_confirmation(self, confirmation_id: int, now: float | None = None) -> str: ...


class ConversationStore(
    CardSource,
    CardLedger,
    LanguageStore,
    QuotaStore,
    ForgetStore,
    UsageSource,
    ConfirmStore,
    Protocol,
):
    """The part of the store the conversation layer reads and writes."""

    async def get_message(self, message_id: int) -> MessageRecord | None: ...

    async def get_session(self, session_id: int) -> SessionRecord | None: ...

    async def set_platform_ids(self, message_id: int, ids: Sequence[str]) -> None: ...

    async def finish_chat_session(
        self, channel: str, chat_id: str, reason: str = "new", now: float | None = None
    ) -> bool: ...

    async def set_feedback(
        self, message_id: int, user_id: str, rating: int, now: float | None = None
    ) -> FeedbackRecord | None: ...

    async def set_feedback_comment(
        self,
        message_id: int,
        user_id: str,
        comment: str,
        now: float | None = None,
        *,
        platform_message_id: str | None = None,
    ) -> bool: ...

    async def set_awaiting(self, question: Awaiting) -> None: ...

    async def peek_awaiting(
        self, channel: str, chat_id: str, user_id: str, now: float | None = None
    ) -> Awaiting | None: ...

    async def take_awaiting(
        self, channel: str, chat_id: str, user_id: str, now: float | None = None
    ) -> Awaiting | None: ...

    async def pending_proposals(self) -> list[Proposal]: ...

    async def set_reviewer_name(
        self, decider: str, name: str, now: float | None = None
    ) -> None: ...

    async def skill_records(self) -> list[SkillRecord]: ...

    async def unsend_message(self, channel: str, chat_id: str, platform_id: str) -> bool: ...

    async def get_meta(self, key: str) -> str | None: ...

    async def set_meta(self, key: str, value: str) -> None: ...


class Turns(Protocol):
    """The agent: one user message in, the stored answer out."""

    async def respond(
        self,
        incoming: IncomingMessage,
        partial: PartialText | None = None,
        access: ToolAccess | None = None,
    ) -> Reply: ...


class Counts(Protocol):
    """Where delivered answers are counted (/metrics)."""

    def answered(self, channel: str, kind: str, seconds: float, *, model_failed: bool) -> None: ...

    def unreadable(self, channel: str) -> None: ...

    def over_limit(self, channel: str, limit: str) -> None: ...


class Decisions(CardReview, Protocol):
    """The review operations a chat admin uses."""

    async def get(self, proposal_id: int) -> Proposal: ...

    async def approve(self, proposal_id: int, decider: str) -> Decision: ...

    async def reject(
        self, proposal_id: int, decider: str, reason: str | None = None
    ) -> Decision: ...

    async def give_reason(self, proposal_id: int, reason: str | None) -> Proposal: ...

    async def reopen(
        self, proposal_id: int, decider: str, reason: str | None = None
    ) -> Decision: ...


class Synthesis(Protocol):
    """Running a synthesis pass, and the measured effect of each skill."""

    async def run(self, trigger: str = "manual") -> RunSummary: ...

    async def effects(self) -> dict[str, SkillEffect]: ...
