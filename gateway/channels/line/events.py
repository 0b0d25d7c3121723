"""Reading LINE webhook events: the SDK's models, sources as chats, mentions and commands."""

from __future__ import annotations

import logging
import unicodedata
from typing import Any

from linebot.v3.webhooks import Event, GroupSource, RoomSource, TextMessageContent, UserSource

from gateway.conversation.dispatch import KNOWN_COMMANDS
from gateway.core.models import ChatRef

log = logging.getLogger(__name__)

COMMANDS = tuple(f"/{name}" for name in KNOWN_COMMANDS if name != "start")
"""LINE greets on follow, so "/start" is text for the model there."""


def parse_event(raw: dict[str, Any]) -> Event | None:
    """The SDK's model of a stored event, or None when LINE sent something we cannot read."""
    try:
        return Event.from_dict(raw)
    except Exception as exc:  # the generated models raise ValueError, KeyError or TypeError
        log.info("skipping LINE event %s: %s", raw.get("webhookEventId"), exc)
        return None


def inbox_key(event: dict[str, Any], event_id: str) -> str:
    """Inbox key: events of one chat in order; a postback alone, so it never waits behind a turn."""
    if event.get("type") == "postback":
        return f"pb:{event_id}"
    source = event.get("source")
    if isinstance(source, dict):
        for field in ("groupId", "roomId", "userId"):
            if isinstance(source.get(field), str):
                return str(source[field])
    return f"event:{event_id}"


def chat_of(source: Any) -> ChatRef | None:
    if isinstance(source, GroupSource):
        return ChatRef(
            channel="line", chat_id=source.group_id, user_id=source.user_id, is_group=True
        )
    if isinstance(source, RoomSource):
        return ChatRef(
            channel="line", chat_id=source.room_id, user_id=source.user_id, is_group=True
        )
    if isinstance(source, UserSource) and source.user_id:
        return ChatRef(channel="line", chat_id=source.user_id, user_id=source.user_id)
    return None


def self_mentions(message: TextMessageContent) -> list[tuple[int, int]]:
    """(index, length) in UTF-16 units of each mention of the bot itself."""
    mentionees = message.mention.mentionees if message.mention else []
    return [(m.index, m.length) for m in mentionees if getattr(m, "is_self", False)]


def without_spans(text: str, spans: list[tuple[int, int]]) -> str:
    """The text with the UTF-16 spans removed (the bot's own @name)."""
    units = text.encode("utf-16-le")
    for index, length in sorted(spans, reverse=True):
        units = units[: 2 * index] + units[2 * (index + length) :]
    return units.decode("utf-16-le", errors="ignore")


def command_of(text: str) -> str | None:
    """A known command at the start of the text (a full-width slash counts too)."""
    words = text.split(maxsplit=1)
    if not words:
        return None
    word = unicodedata.normalize("NFKC", words[0]).lower()
    return word if word in COMMANDS else None
