"""What a turn asks of the store in one go, so that an answer costs few round trips.

A text message reads the chat's state (its language, the user's open question) and, when
it will be a turn, opens that turn with its daily-quota admission in the same transaction
(`ChatState`). The answer is stored together with its share of the daily counts
(`QuotaSpend`), computed from the tokens and model the answer carries (`Spender`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel

from gateway.core.models import AttachmentRecord, MessageKind
from gateway.core.records import Awaiting, LanguageState, OpenedTurn, QuotaCheck


@dataclass(frozen=True)
class Admission:
    """The daily counts a new turn is admitted under (raised by one), all or none."""

    day: str
    checks: tuple[QuotaCheck, ...] = ()


@dataclass(frozen=True)
class TurnStart:
    """Everything `start_turn` needs: the user's message, the session rules, the admission."""

    channel: str
    chat_id: str
    user_id: str | None
    text: str
    inbox_id: int | None
    now: float
    idle_seconds: float
    history_limit: int
    exclude_kinds: Sequence[MessageKind] = ()
    platform_message_id: str | None = None
    attachments: Sequence[AttachmentRecord] = ()
    admission: Admission | None = None
    """None: no daily limit applies (none set, or an admin)."""
    memory: bool = False
    """Read the user's memory entries, where this chat may use them."""
    in_group: bool = False
    context_since: float | None = None
    """Take (and clear) the group's unaddressed lines kept since then."""
    user_name: str | None = None
    """The sender's display name as the platform sent it (remembered for the console)."""


class ChatState(BaseModel):
    """A chat as one message finds it: languages, the open question, and the turn if opened."""

    language: LanguageState
    awaiting: Awaiting | None = None
    turn: OpenedTurn | None = None
    """Opened with the read when asked and the user had no open question."""


@dataclass(frozen=True)
class Usage:
    """What an answer cost, as the agent knows it once the model is done."""

    kind: MessageKind
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model: str | None = None


@dataclass(frozen=True)
class QuotaSpend:
    """An answer's share of the daily counts: answers to add per (scope, subject), tokens, cost."""

    day: str
    counts: tuple[tuple[str, str, int], ...] = field(default_factory=tuple)
    tokens: int = 0
    cost: float = 0.0


Spender = Callable[[Usage], QuotaSpend | None]
"""Turns an answer's usage into what it adds to the daily counts (None: nothing)."""
