"""Stored records as pydantic models: what the store returns and accepts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field

from gateway.core.models import AttachmentRecord, MessageKind, Role
from gateway.core.tools import ToolCallRecord


@dataclass(frozen=True)
class ClaimFence:
    """An inbox claim checked, and its lease extended, by the statement that stores the answer
    of the update (replicas): the send that follows at once needs no check of its own."""

    holder: str
    item_id: int
    claim: int
    lease: float


class InboxItem(BaseModel):
    """One platform update, stored before it was acknowledged."""

    id: int
    channel: str
    update_id: str
    chat_key: str
    payload: str
    received_at: float
    attempts: int = 0
    processed_at: float | None = None
    last_error: str | None = None
    claim: int = 0
    """How many times replicas claimed it; work is fenced by the number it was claimed with."""
    given_up: bool = False
    """Not stored: the inbox gave up on it (its attempts failed, or killed the process), and
    hands it on once more only for the user to be told."""
    started: bool = False
    """Not stored: its first attempt was counted as it was stored (it goes straight to the
    worker), so the worker counts none before that attempt."""


class SessionRecord(BaseModel):
    """A run of conversation in one chat, finished once idle or on /new."""

    id: int
    channel: str
    chat_id: str
    user_id: str | None = None
    started_at: float
    last_activity_at: float
    finished_at: float | None = None
    finish_reason: str | None = None


class MessageRecord(BaseModel):
    """A stored user or assistant message."""

    id: int
    session_id: int
    role: Role
    text: str
    kind: MessageKind = "normal"
    platform_message_ids: list[str] = Field(default_factory=list)
    inbox_id: int | None = None
    created_at: float
    platform_message_id: str | None = None
    """The platform's id of a user's message."""
    user_id: str | None = None
    """Whose message it is: the sender of a question, the user an answer was for."""
    unsent_at: float | None = None
    """When the user took the message back (LINE unsend): neither the model nor synthesis
    sees it again, nor the answer given to it."""
    attachments: list[AttachmentRecord] = Field(default_factory=list)


class GroupLine(BaseModel):
    """A group message not addressed to the bot, kept until the bot is next addressed there."""

    user_id: str | None = None
    user_name: str | None = None
    text: str


class OpenedTurn(BaseModel):
    """A turn's start: its session and history, or the answer an earlier attempt stored."""

    session_id: int = 0
    history: list[MessageRecord] = Field(default_factory=list)
    answer: MessageRecord | None = None
    memory: list[str] | None = None
    """The user's memory entries, oldest first; None where this turn has no memory."""
    context: list[GroupLine] = Field(default_factory=list)
    """The group's unaddressed messages since the bot last answered there (now cleared)."""
    persona: str | None = None
    """The chat's own persona (/persona), if its admins set one."""
    over: QuotaCheck | None = None
    """The daily count that refused the turn; then nothing was written."""
    resumed: bool = False
    """The user's message was stored by an earlier attempt, which counted it already."""


class Trace(BaseModel):
    """How one answer was made: skills offered, loaded and withheld, tools, outcome, cost."""

    skills_offered: list[str] = Field(default_factory=list)
    skills_loaded: list[str] = Field(default_factory=list)
    skills_withheld: list[str] = Field(default_factory=list)
    skills_unavailable: list[str] = Field(default_factory=list)
    """Skills left out of the index because a tool they name is not available this turn
    (the reason is in `notes`); unlike `skills_withheld`, not a holdout."""
    tools_used: list[str] = Field(default_factory=list)
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    """Each call of a configured tool: server, tool, masked arguments, status, duration, size."""
    completed: bool = True
    error: str | None = None
    latency_ms: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens_known: bool = True
    """Every model call of the turn reported its tokens (else the counts are a lower bound)."""
    model: str | None = None
    finish_reason: str | None = None
    notes: list[str] = Field(default_factory=list)
    persona_hash: str | None = None
    """The persona the answer was made under (the operator's and the chat's), hashed."""
    operator_error: bool = False
    """It failed for the gateway's configuration (key, URL, model, no model): not evidence."""


class FeedbackRecord(BaseModel):
    """One user's rating of one answer, with an optional comment."""

    id: int
    message_id: int
    channel: str
    chat_id: str
    user_id: str
    rating: int
    comment: str | None = None
    created_at: float
    updated_at: float


class SkillRecord(BaseModel):
    """The registry row of a skill: where it came from and whether it is in use."""

    slug: str
    source: str
    enabled: bool = True
    review_status: str = "live"
    content_hash: str
    created_at: float
    updated_at: float


@dataclass(frozen=True, slots=True)
class SkillFileRecord:
    """A skill file as start-up last read it: while its size and modification time are
    unchanged, its hash and description are taken from here instead of the file.
    (A plain dataclass: start-up builds ten thousand of them, and they are never input.)"""

    slug: str
    content_hash: str
    size: int
    mtime_ns: int
    checked_at: float
    description: str
    proposal_id: int | None = None
    allowed_tools: str = ""
    """The tools the skill names, space-separated."""


class SkillSwitch(BaseModel):
    """A skill switched off or on by hand: by whom, why and when."""

    slug: str
    enabled: bool
    switched_by: str
    reason: str | None = None
    switched_at: float


class Awaiting(BaseModel):
    """A question the bot asked a user, whose answer is not a normal turn."""

    channel: str
    chat_id: str
    user_id: str
    purpose: str
    ref: str
    prompt_message_id: str | None = None
    expires_at: float
    created_at: float


class AnswerUsage(BaseModel):
    """The tokens of one answer, where it was given and to whom."""

    at: float
    channel: str
    chat_id: str
    user_id: str | None = None
    model: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens_known: bool = True


class RunUsage(BaseModel):
    """The tokens one synthesis run spent."""

    at: float
    model: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True)
class QuotaCheck:
    """One daily count an answer falls under, with its limits (None: not limited)."""

    scope: str
    """"user", "chat" or "gateway"."""
    subject: str
    answers: int | None = None
    tokens: int | None = None
    cost: float | None = None


class QuotaCount(BaseModel):
    """One day's count of answers, tokens and cost for a user, a chat or the gateway."""

    day: str
    scope: str
    subject: str
    answers: int
    tokens: int
    cost: float


DeleteReason = Literal["retention", "forget"]


class DeletedSession(BaseModel):
    """A session deleted by retention or at its user's request: only its id remains."""

    session_id: int
    reason: DeleteReason
    deleted_at: float


class Forgotten(BaseModel):
    """What forgetting a user deleted."""

    sessions: int = 0
    messages: int = 0
    feedback: int = 0
    updates: int = 0
    memory: int = 0
    """Memory entries (`/remember`)."""
    tasks: int = 0
    """Scheduled tasks (reminders), with the record of their occurrences."""
    files: list[str] = Field(default_factory=list, exclude=True)
    """Kept media files (names under the media dir) left without an attachment: to remove."""
    session_ids: list[int] = Field(default_factory=list, exclude=True)
    """Sessions that held the user's words: pending proposals made from them are withdrawn."""


class LanguageState(BaseModel):
    """What is known about the language of one user in one chat."""

    chosen: str | None = None
    """The chat's own choice (/language), if any."""
    tag: str | None = None
    """The user's language tag as their platform last gave it."""
    ok: bool = False
    """Whether the last lookup of `tag` succeeded."""
    checked_at: float | None = None
    """When `tag` was last looked up (None: never)."""
    voice: str | None = None
    """The user's /voice choice ("on", "off", "auto"); None: not chosen (auto)."""


class PressState(BaseModel):
    """A rating press as the store found and kept it, in one go: the languages, the user's open
    question, and the rating stored."""

    language: LanguageState
    awaiting: Awaiting | None = None
    """The user's open question in the chat, as it was before the press."""
    feedback: FeedbackRecord | None = None
    """The user's rating as stored now (with any comment given before); None: refused, as the
    answer is no normal answer given in this chat (or not by the pressed message)."""


class Rating(BaseModel):
    """One user's rating of an answer."""

    rating: int
    comment: str | None = None


class Turn(BaseModel):
    """A message of a session, with the answer's trace and ratings."""

    message_id: int
    role: str
    text: str
    kind: str = "normal"
    skills_loaded: list[str] = Field(default_factory=list)
    tools_used: list[str] = Field(default_factory=list)
    tool_statuses: list[str] = Field(default_factory=list)
    """Each call of a configured tool as "<server>__<tool> <status>": never its arguments or
    result, so nothing a tool returned reaches synthesis."""
    completed: bool = True
    error: str | None = None
    ratings: list[Rating] = Field(default_factory=list)
    attachments: list[str] = Field(default_factory=list)
    """What came with a user's message, as labels ("voice message, 0:12, transcribed"): its
    text is the transcript or caption; media and documents' text never reach synthesis."""

    @property
    def failed(self) -> bool:
        return self.role == "assistant" and (
            self.kind == "error" or not self.completed or self.error is not None
        )

    @property
    def notable(self) -> bool:
        return bool(self.ratings) or self.failed


class SessionEvidence(BaseModel):
    """One finished session as the synthesizer reads it."""

    session_id: int
    channel: str
    turns: list[Turn] = Field(default_factory=list)

    def has_signal(self) -> bool:
        """Rated or failed, and at least one question with an answer."""
        roles = {t.role for t in self.turns}
        return {"user", "assistant"} <= roles and any(t.notable for t in self.turns)

    def skills_loaded(self) -> list[str]:
        return [s for t in self.turns for s in t.skills_loaded]
