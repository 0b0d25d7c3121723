"""What a channel hands the conversation layer: platform-free messages, presses and greetings.

A platform package decodes its webhook into one of these, and says how its platform
speaks (`Dialect`) and who may use the bot there (`Audience`); the layer decides the rest.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Literal

from gateway.core.capabilities import Capabilities
from gateway.core.models import ChatRef
from gateway.core.push_quota import PushQuotaReader
from gateway.media.remote import Remote
from gateway.review.buttons import CardAction, CardSigner


@dataclass(frozen=True)
class Message:
    """A message from a user: its words (text or caption, None without any) and what else it holds.

    What the gateway makes of it (answer, notice, silence) is decided in `content`.
    """

    chat: ChatRef
    text: str | None
    media: str | None = None
    """What else the user sent: "photo", "voice", "audio", "video note", "sticker",
    "location", "file", ..."""
    details: tuple[str, ...] = ()
    """Words the platform gives about the media: a place's title and address, a sticker's
    text or keywords."""
    album: str | None = None
    """The album (Telegram media group, LINE image set) the message is one item of."""
    attachment: Remote | None = None
    """The file to read (voice, photo, document), where the gateway reads `media` and the
    channel can download it; what it gets is decided in `attachments`."""
    edited: bool = False
    """An edit of a message sent earlier."""
    message_id: str | None = None
    """The platform's id of this message."""
    user_name: str | None = None
    command: str | None = None
    """A command for this bot ("new", "help", ...) starting the text, without its slash."""
    addressed: bool = True
    """In a group: the bot was mentioned, replied to or given a command."""
    replying_to: str | None = None
    """The platform id of the message this one replies to, if any."""
    inbox_id: int | None = None
    given_up: bool = False
    """The inbox gave up on it (`InboxItem.given_up`): only a notice says so."""


@dataclass(frozen=True)
class Press:
    """A button press (Telegram callback query, LINE postback) by `chat.user_id`."""

    chat: ChatRef
    data: str
    message_id: str | None = None
    """The message carrying the button, where the platform says which."""
    inbox_id: int | None = None
    """The stored update the press came in."""


@dataclass(frozen=True)
class Greeting:
    """The bot was added: by a user (`follow`, `refollow` after a block) or to a group."""

    chat: ChatRef
    kind: Literal["follow", "refollow", "join"]


@dataclass(frozen=True)
class Dialect:
    """The words one platform uses, and how long it waits for an answer to a question.

    Each text is an English message id (marked `N_`), said through the chat's `Texts`.
    """

    help: str
    new: str
    refusal: str
    """To a user not on the allowlist; may name `{user_id}`."""
    thanks_for_comment: str
    start: str | None = None
    """The answer to /start (`{name}`), on platforms that have it."""
    unknown: str | None = None
    """The answer to an unknown command (`{command}`); None where those are plain text."""
    group_hint: str = ""
    text_only: str | None = None
    greeting: str | None = None
    """To a new friend; may name `{help}`, the help text."""
    welcome_back: str | None = None
    """To a friend back after a block; may name `{help}`."""
    group_greeting: str | None = None
    running_synthesis: str | None = None
    """Said before a synthesis pass starts, where a second message costs nothing."""
    comment_seconds: float = 600.0
    reason_seconds: float = 600.0


@dataclass(frozen=True)
class Audience:
    """Who may use the bot and who reviews, by platform user id."""

    allowlist: frozenset[str]
    admins: frozenset[str]

    @classmethod
    def of(cls, allowlist: Collection[object], admins: Collection[object]) -> Audience:
        return cls(frozenset(str(u) for u in allowlist), frozenset(str(u) for u in admins))

    def allowed(self, user_id: str | None) -> bool:
        """Everyone without an allowlist; else those users and the admins."""
        if not self.allowlist:
            return True
        return user_id is not None and (user_id in self.allowlist or user_id in self.admins)

    def is_admin(self, user_id: str | None) -> bool:
        return user_id is not None and user_id in self.admins


@dataclass(frozen=True)
class Profile:
    """One channel as the conversation layer knows it."""

    channel: str
    dialect: Dialect
    audience: Audience
    signer: CardSigner
    """Signs and verifies this channel's proposal-card buttons."""
    card_actions: frozenset[CardAction] = frozenset(("approve", "reject", "diff", "skip"))
    """The card buttons this platform shows; data for any other is refused."""
    label: str = ""
    """How log lines name the platform ("telegram", "LINE"); the channel name if empty."""
    capabilities: Capabilities = field(default_factory=Capabilities)
    """What the platform can do (its spec's): what the layer does where platforms differ."""
    push_quota: PushQuotaReader | None = None
    """Reads the platform's monthly push quota (LINE's), which scheduled tasks count
    against; None: the platform has none."""

    @property
    def who(self) -> str:
        return self.label or self.channel
