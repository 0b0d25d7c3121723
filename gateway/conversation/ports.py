"""What the conversation layer needs from the outside, as protocols.

`Responder` is the one a platform implements: how to say things in the chat an
event came from, made of the few ports its callers use (`Replies`, `Answers`,
`RatingReplies`, `ReviewReplies`, and the language's `Speaker`). The store, the
agent, the review operations and the metrics implement the rest; the application hands
them to the layer together (`ConversationPorts`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Literal, Protocol

from gateway.conversation.attachments import Attachments
from gateway.conversation.context import ContextStore
from gateway.conversation.language import Languages, LanguageStore, Speaker
from gateway.conversation.memory import MemoryCommandStore
from gateway.conversation.persona import ChatAdmins, PersonaStore
from gateway.conversation.pictures import PictureStore
from gateway.conversation.voice import VoiceStore, Voicing
from gateway.core.memory import Memory
from gateway.core.models import Button, ChatRef, IncomingMessage, Reply, Role
from gateway.core.ports import Checkpoint, Meta, SkillRecords, TurnStarts
from gateway.core.records import (
    Awaiting,
    Forgotten,
    MessageRecord,
    OpenedTurn,
    PressState,
    QuotaCheck,
    SessionRecord,
)
from gateway.core.scheduled import NewTask, ScheduledTask
from gateway.core.stream import PartialText
from gateway.core.tools import ToolAccess
from gateway.core.turn import Admission, ChatState, Spender, TurnStart
from gateway.i18n import Texts
from gateway.media.links import MediaLinks
from gateway.review.cards import Card, CardReview, CardSource, ReviewerNames
from gateway.review.ports import CardLedger, PendingProposals
from gateway.review.proposals import Proposal
from gateway.review.repeats import NoticeItem
from gateway.review.reviewer import Decision
from gateway.skills.effect import SkillEffect
from gateway.synthesis.synthesizer import RunSummary
from gateway.usage import UsageSource


class Replies(Protocol):
    """Saying something in the chat of the event being handled: what every caller needs."""

    chat: ChatRef
    texts: Texts
    """The fixed texts in the user's language; the conversation layer sets them first."""

    async def notice(
        self, text: str, *, buttons: Sequence[Button] = (), quote: bool = False
    ) -> None:
        """Say something that is not the model's answer; `quote` replies to the message."""
        ...

    async def acknowledge(self, text: str, *, courtesy: bool = False) -> None:
        """Answer a button press; a `courtesy` may be dropped where a press needs no answer."""
        ...

    async def close_buttons(self) -> None:
        """The pressed message's question is decided: its buttons go where the platform can
        edit a sent message (Telegram); elsewhere they go by themselves (LINE's quick
        replies) and nothing is done."""
        ...


class Answers(Replies, Speaker, Protocol):
    """The turn: show that an answer is being written, then deliver it."""

    def working(self) -> AbstractAsyncContextManager[PartialText | None]:
        """Show that an answer is being written ("typing…", the loading animation).

        A platform that shows the answer as it grows yields the `PartialText` to fill;
        one that does not (or a chat where it does not) yields None.
        """
        ...

    async def deliver(self, reply: Reply) -> list[str]:
        """Send an answer with its buttons, continuing what an earlier attempt sent.

        The platform records where each part went on the stored answer as it goes out
        (the one writer of those ids), so a retry continues with the next part.
        """
        ...


class RatingReplies(Replies, Speaker, Protocol):
    """What feedback shows (in the presser's language): the rating, the question what went wrong."""

    async def show_rating(self, answer_id: int, rating: int) -> None:
        """Show the rating on the rated answer, where the platform can."""
        ...

    async def ask_comment(self, answer_id: int) -> str | None:
        """Ask what went wrong; the prompt's id when only a reply to it is the answer."""
        ...


class ReviewReplies(Replies, ChatAdmins, Protocol):
    """What review by chat admins shows: cards, diffs, the question why a rejection."""

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


class Responder(Answers, RatingReplies, ReviewReplies, Protocol):
    """How a platform answers in the chat of the event being handled: every port above.

    A platform implements it whole; each part of the conversation layer asks for the port
    it uses (`Replies` for privacy, `RatingReplies` for feedback, `ReviewReplies` for review
    by chat, `Answers` for the turn, `Speaker` for languages).
    """


class QuotaStore(Protocol):
    """The daily counts (`gateway.store.usage`) beyond what a turn's own transactions raise:
    an answer admitted ahead of its turn (an attachment), and what it gives back."""

    async def quota_first(self, day: str, flag: str) -> bool: ...

    async def quota_admit(self, day: str, checks: Sequence[QuotaCheck]) -> QuotaCheck | None: ...

    async def quota_spend(
        self, day: str, counts: Sequence[tuple[str, str, int]], *, tokens: int, cost: float
    ) -> None: ...

    async def message_for_inbox(self, inbox_id: int, role: Role) -> MessageRecord | None: ...


class ForgetStore(Checkpoint, Protocol):
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
        digest: str,
        expires_at: float,
        now: float | None = None,
    ) -> int: ...

    async def press_confirmation(
        self,
        confirmation_id: int,
        channel: str,
        user_id: str | None,
        decision: Literal["approved", "declined"],
        *,
        digest: str,
        now: float | None = None,
    ) -> str: ...

    async def confirmation_decision(self, confirmation_id: int) -> str | None: ...

    async def expire_confirmation(self, confirmation_id: int, now: float | None = None) -> str: ...


class TaskStore(Protocol):
    """The user's timezone and their tasks (`gateway.store.schedule`)."""

    async def user_timezone(self, channel: str, user_id: str) -> str | None: ...

    async def set_user_timezone(
        self, channel: str, user_id: str, timezone: str, now: float | None = None
    ) -> None: ...

    async def task_add(self, task: NewTask, now: float | None = None) -> ScheduledTask: ...

    async def task_add_held(
        self, task: NewTask, limit: int, now: float | None = None
    ) -> ScheduledTask | None: ...

    async def tasks_of(self, channel: str, chat_id: str, user_id: str) -> list[ScheduledTask]: ...

    async def task_cancel_own(self, task_id: int, channel: str, user_id: str) -> str | None: ...

    async def tasks_pause_chat(self, channel: str, chat_id: str) -> int: ...

    async def tasks_due_before(self, channel: str, before: float) -> list[ScheduledTask]: ...


class TaskCommandStore(TaskStore, QuotaStore, Protocol):
    """Tasks, and the flag that tells the admins once a month of a push quota near its end."""


class AwaitingStore(Protocol):
    """The open questions (`Questions`): a rejection's reason, a comment after 👎."""

    async def set_awaiting(self, question: Awaiting) -> None: ...

    async def peek_awaiting(
        self, channel: str, chat_id: str, user_id: str, now: float | None = None
    ) -> Awaiting | None: ...

    async def take_awaiting(
        self, channel: str, chat_id: str, user_id: str, now: float | None = None
    ) -> Awaiting | None: ...


class RatedAnswers(Protocol):
    """The rated answer and its session (`feedback.rateable`)."""

    async def get_message(self, message_id: int) -> MessageRecord | None: ...

    async def get_session(self, session_id: int) -> SessionRecord | None: ...


class FeedbackStore(RatedAnswers, Protocol):
    """Ratings and their comments (`Feedback`)."""

    async def rate_answer(
        self,
        channel: str,
        chat_id: str,
        user_id: str,
        answer_id: int,
        rating: int,
        now: float,
        *,
        pressed: str | None = None,
    ) -> PressState: ...

    async def set_feedback_comment(
        self,
        message_id: int,
        user_id: str,
        comment: str,
        now: float | None = None,
        *,
        platform_message_id: str | None = None,
    ) -> bool: ...


class RepeatItems(ReviewerNames, Protocol):
    """What a press on a repeat notice reads: the notice item, and how a decider is shown
    (and remembered) (`RepeatPresses`)."""

    async def repeat_notice_item(self, item_id: int) -> NoticeItem | None: ...

    async def set_reviewer_name(
        self, decider: str, name: str, now: float | None = None
    ) -> None: ...


class SkillListing(PendingProposals, SkillRecords, Protocol):
    """What /skills lists (`review.skills_text`)."""


class ReviewChatStore(CardSource, CardLedger, SkillListing, UsageSource, Protocol):
    """What review by chat reads and writes (`ReviewChat`): cards and their copies, the
    skills, and usage for /usage."""


class ConversationStore(
    TurnStarts,
    Meta,
    AwaitingStore,
    FeedbackStore,
    ReviewChatStore,
    RepeatItems,
    ContextStore,
    LanguageStore,
    MemoryCommandStore,
    PersonaStore,
    QuotaStore,
    ForgetStore,
    ConfirmStore,
    VoiceStore,
    PictureStore,
    TaskStore,
    Protocol,
):
    """The part of the store the conversation layer reads and writes: what `Conversation`
    calls itself (and `TurnStarts`, `Meta`), and the ports of the parts it builds."""

    async def chat_state(
        self,
        channel: str,
        chat_id: str,
        user_id: str | None,
        now: float,
        turn: TurnStart | None = None,
    ) -> ChatState: ...

    async def finish_chat_session(
        self, channel: str, chat_id: str, reason: str = "new", now: float | None = None
    ) -> bool: ...

    async def unsend_message(self, channel: str, chat_id: str, platform_id: str) -> bool: ...


class Turns(Protocol):
    """The agent: one user message in, the stored answer out."""

    def start(self, incoming: IncomingMessage, admission: Admission | None = None) -> TurnStart:
        """How the store opens the turn of `incoming`."""
        ...

    async def respond(
        self,
        incoming: IncomingMessage,
        partial: PartialText | None = None,
        access: ToolAccess | None = None,
        *,
        turn: OpenedTurn | None = None,
        spend: Spender | None = None,
    ) -> Reply: ...


class Counts(Protocol):
    """Where delivered answers are counted (/metrics)."""

    def answered(self, channel: str, kind: str, seconds: float, *, model_failed: bool) -> None: ...

    def unreadable(self, channel: str) -> None: ...

    def over_limit(self, channel: str, limit: str) -> None: ...


class Withdrawals(Protocol):
    """Withdrawing pending proposals made from deleted sessions (`Reviewer`)."""

    async def withdraw_evidence(self, session_ids: Sequence[int]) -> list[int]: ...


class Decisions(CardReview, Withdrawals, Protocol):
    """The review operations a chat admin uses."""

    async def get(self, proposal_id: int) -> Proposal: ...

    async def approve(
        self, proposal_id: int, decider: str, *, name: str | None = None
    ) -> Decision: ...

    async def reject(
        self,
        proposal_id: int,
        decider: str,
        reason: str | None = None,
        *,
        name: str | None = None,
    ) -> Decision: ...

    async def give_reason(self, proposal_id: int, reason: str | None) -> Proposal: ...

    async def reopen(
        self, proposal_id: int, decider: str, reason: str | None = None
    ) -> Decision: ...


class Synthesis(Protocol):
    """Running a synthesis pass, and the measured effect of each skill."""

    async def run(self, trigger: str = "manual") -> RunSummary: ...

    async def effects(self) -> dict[str, SkillEffect]: ...


class Alerts(Protocol):
    """Tell every admin a fixed text (translated for each); `ref` keeps a retried push single."""

    async def __call__(self, message: str, ref: str, /, **values: object) -> None: ...


@dataclass(frozen=True)
class ConversationPorts:
    """What a channel's conversation is given from outside the layer, the same for every
    channel (the application builds it)."""

    store: ConversationStore
    turns: Turns
    """The agent."""
    counts: Counts
    review: Decisions
    synthesis: Synthesis
    languages: Languages
    """The language of each chat's fixed texts."""
    alerts: Alerts | None = None
    """Tells the chat admins (a daily limit reached); None: the log only."""
    attachments: Attachments | None = None
    """Reads voice notes, photos and documents; None: they get the text-only notice."""
    memory: Memory | None = None
    """Per-user memory; None when SKILLGATE_MEMORY is off."""
    voicing: Voicing | None = None
    """Text-to-speech for spoken answers; None when TTS_MODEL is not set."""
    links: MediaLinks | None = None
    """Files served by signed link (LINE fetches pictures by URL); None: no https
    SKILLGATE_PUBLIC_URL."""
    clock: Callable[[], float] = time.time
    """Now, for every window the conversation keeps (tests move it)."""
