"""Everything a platform package uses of the gateway, in one place: the only module of the
gateway it imports (`tests/channels/test_platform_surface.py` holds Telegram, LINE and the
tests' Loopchat to it). docs/ADDING_A_CHANNEL.md walks through a platform built on it.

A platform package has

* `settings.py`: its `PlatformSettings` subclass, read with `settings.section(ItsSettings)`;
* `spec.py`: its `PlatformSpec` (imported by the registry, the CLI and the console: it
  imports nothing heavy);
* `entry.py`: the `Entry` functions (its `Channel`, doctor's checks, set-webhook steps),
  imported only when the platform is configured;
* its `Channel`: a `Webhook` subclass for what it receives, a handler of what was stored
  (decoded into `Message`s and `Press`es for `Ports.conversation`), and a `Responder`
  that says what the conversation layer says, in the platform's way.

Each name is loaded from the module that defines it (`HOMES`, grouped by what the names
are for) when first used, so that importing this module, as every spec does, stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gateway.channels.base import (
        INTAKE,
        AnswerLog,
        Batch,
        Channel,
        DeliveryLog,
        Handler,
        Intake,
        Ports,
        storable,
        stored_json,
    )
    from gateway.channels.interview import Asker, Found, Setting, Setup
    from gateway.channels.registry import secrets
    from gateway.channels.spec import (
        Entry,
        Ids,
        PlatformSettings,
        PlatformSpec,
        http_url,
        id_list,
    )
    from gateway.channels.text import CUT_NOTE, capped, split_message, split_text, utf16_len
    from gateway.channels.webhook import JSON, Refused, Update, Webhook
    from gateway.config import Settings
    from gateway.conversation.content import MEDIA_META, MEDIA_SENDER
    from gateway.conversation.dispatch import COMMANDS, KNOWN_COMMANDS
    from gateway.conversation.feedback import STALE
    from gateway.conversation.language import Languages
    from gateway.conversation.models import (
        Audience,
        Dialect,
        Greeting,
        Message,
        Press,
        Profile,
    )
    from gateway.conversation.ports import Responder
    from gateway.conversation.preview import previewing
    from gateway.conversation.review import ADMIN_COMMANDS, MAX_CARDS_SHOWN
    from gateway.core.capabilities import Capabilities
    from gateway.core.models import Button, ChatRef, Reply, rating_buttons
    from gateway.core.ports import Meta
    from gateway.core.push_quota import PushQuota
    from gateway.core.records import InboxItem
    from gateway.core.settings import MB
    from gateway.core.stream import PartialText
    from gateway.core.tasks import cancel_and_wait
    from gateway.errors import (
        ChannelError,
        ChatUnreachable,
        ConfigError,
        MediaTooBig,
        MediaUnavailable,
        RateLimited,
        SkillgateError,
        StoreError,
    )
    from gateway.i18n import ENGLISH, N_, Np_, Texts, language_of, texts_for
    from gateway.logs import mask
    from gateway.media.remote import READABLE, Fetch, Remote
    from gateway.operator import SET_PUBLIC_URL, SET_WEBHOOK, Check, Step, public_endpoint
    from gateway.review.buttons import CardAction, CardSigner
    from gateway.review.cards import Card, clip, fit, trimmed_note
    from gateway.review.delivery import CopyGone
    from gateway.review.ports import CardDelivery
    from gateway.review.proposals import Proposal
    from gateway.review.repeats import NoticeView, RepeatNotice, notice_view
    from gateway.store import store_for
    from gateway.store.base import Store
    from gateway.store.registry import RegistryQueries

HOMES: dict[str, tuple[str, ...]] = {
    # What a platform says about itself (spec.py) and its settings.
    "gateway.channels.spec": (
        "PlatformSpec",
        "PlatformSettings",
        "Ids",
        "http_url",
        "id_list",
        "Entry",
    ),
    "gateway.config": ("Settings",),
    "gateway.core.capabilities": ("Capabilities",),
    "gateway.channels.registry": ("secrets",),
    # `skillgate init`: what it asks, and a platform's check of the answers.
    "gateway.channels.interview": ("Setting", "Setup", "Asker", "Found"),
    # The channel: its webhook, its ports, what it is handed back from the inbox.
    "gateway.channels.base": (
        "Channel",
        "Ports",
        "Handler",
        "Intake",
        "INTAKE",
        "DeliveryLog",
        "AnswerLog",
        "Batch",
        "storable",
        "stored_json",
    ),
    "gateway.channels.webhook": ("Webhook", "Update", "Refused", "JSON"),
    "gateway.core.records": ("InboxItem",),
    # The conversation layer: what a channel hands it, and what it asks of the channel.
    "gateway.conversation.models": (
        "Profile",
        "Dialect",
        "Audience",
        "Message",
        "Press",
        "Greeting",
    ),
    "gateway.conversation.ports": ("Responder",),
    "gateway.conversation.dispatch": ("COMMANDS", "KNOWN_COMMANDS"),
    "gateway.conversation.review": ("ADMIN_COMMANDS", "MAX_CARDS_SHOWN"),
    "gateway.conversation.feedback": ("STALE",),
    "gateway.conversation.content": ("MEDIA_META", "MEDIA_SENDER"),
    "gateway.conversation.language": ("Languages",),
    "gateway.conversation.preview": ("previewing",),
    "gateway.core.models": ("ChatRef", "Reply", "Button", "rating_buttons"),
    "gateway.core.stream": ("PartialText",),
    # Small parts: a chat's notes in the store, stopping a background task.
    "gateway.core.ports": ("Meta",),
    "gateway.core.push_quota": ("PushQuota",),
    "gateway.core.tasks": ("cancel_and_wait",),
    # Text: the platform's limits on a message's length.
    "gateway.channels.text": ("split_text", "split_message", "capped", "utf16_len", "CUT_NOTE"),
    "gateway.i18n": ("Texts", "ENGLISH", "texts_for", "language_of", "N_", "Np_"),
    # Users' files: what a platform's download is given and says.
    "gateway.media.remote": ("Remote", "Fetch", "READABLE"),
    "gateway.core.settings": ("MB",),
    # Proposal cards for the admins in chat.
    "gateway.review.cards": ("Card", "fit", "clip", "trimmed_note"),
    "gateway.review.buttons": ("CardSigner", "CardAction"),
    "gateway.review.ports": ("CardDelivery",),
    "gateway.review.delivery": ("CopyGone",),
    "gateway.review.proposals": ("Proposal",),
    "gateway.review.repeats": ("RepeatNotice", "NoticeView", "notice_view"),
    # The operator's commands (doctor, set-webhook) and the store they keep notes in.
    "gateway.operator": ("Check", "Step", "public_endpoint", "SET_PUBLIC_URL", "SET_WEBHOOK"),
    "gateway.store": ("store_for",),
    "gateway.store.base": ("Store",),
    "gateway.store.registry": ("RegistryQueries",),
    "gateway.logs": ("mask",),
    # Errors a channel raises or handles.
    "gateway.errors": (
        "SkillgateError",
        "ChannelError",
        "ChatUnreachable",
        "ConfigError",
        "StoreError",
        "RateLimited",
        "MediaTooBig",
        "MediaUnavailable",
    ),
}
"""Each name's home module: where it is defined and documented."""

_HOME = {name: module for module, names in HOMES.items() for name in names}

__all__ = [
    "ADMIN_COMMANDS",
    "COMMANDS",
    "CUT_NOTE",
    "ENGLISH",
    "INTAKE",
    "JSON",
    "KNOWN_COMMANDS",
    "MAX_CARDS_SHOWN",
    "MB",
    "MEDIA_META",
    "MEDIA_SENDER",
    "N_",
    "READABLE",
    "SET_PUBLIC_URL",
    "SET_WEBHOOK",
    "STALE",
    "AnswerLog",
    "Asker",
    "Audience",
    "Batch",
    "Button",
    "Capabilities",
    "Card",
    "CardAction",
    "CardDelivery",
    "CardSigner",
    "Channel",
    "ChannelError",
    "ChatRef",
    "ChatUnreachable",
    "Check",
    "ConfigError",
    "CopyGone",
    "DeliveryLog",
    "Dialect",
    "Entry",
    "Fetch",
    "Found",
    "Greeting",
    "Handler",
    "Ids",
    "InboxItem",
    "Intake",
    "Languages",
    "MediaTooBig",
    "MediaUnavailable",
    "Message",
    "Meta",
    "NoticeView",
    "Np_",
    "PartialText",
    "PlatformSettings",
    "PlatformSpec",
    "Ports",
    "Press",
    "Profile",
    "Proposal",
    "PushQuota",
    "RateLimited",
    "Refused",
    "RegistryQueries",
    "Remote",
    "RepeatNotice",
    "Reply",
    "Responder",
    "Setting",
    "Settings",
    "Setup",
    "SkillgateError",
    "Step",
    "Store",
    "StoreError",
    "Texts",
    "Update",
    "Webhook",
    "cancel_and_wait",
    "capped",
    "clip",
    "fit",
    "http_url",
    "id_list",
    "language_of",
    "mask",
    "notice_view",
    "previewing",
    "public_endpoint",
    "rating_buttons",
    "secrets",
    "split_message",
    "split_text",
    "storable",
    "store_for",
    "stored_json",
    "texts_for",
    "trimmed_note",
    "utf16_len",
]


def __getattr__(name: str) -> Any:
    """A name of the surface, imported from its home module on first use (and kept)."""
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
