"""Reading LINE webhook events: their fields, sources as chats, mentions, commands, content."""

from __future__ import annotations

import hashlib
import json
import time
import unicodedata
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from gateway.channels.api import KNOWN_COMMANDS, ChatRef, Remote

COMMANDS = tuple(f"/{name}" for name in KNOWN_COMMANDS if name != "start")
"""LINE greets on follow, so "/start" is text for the model there."""


@dataclass(frozen=True)
class LineEvent:
    """The fields of a webhook event the gateway uses, read from its JSON."""

    type: str
    event_id: str
    mode: str
    timestamp: float
    """Seconds since the epoch (LINE sends milliseconds)."""
    redelivery: bool
    reply_token: str | None
    chat: ChatRef | None
    raw: dict[str, Any]

    def part(self, name: str) -> dict[str, Any]:
        """A member object of the event ("message", "postback", "unsend", ...), or {}."""
        value = self.raw.get(name)
        return value if isinstance(value, dict) else {}


def read_event(raw: dict[str, Any], event_id: str) -> LineEvent:
    """The event as the gateway reads it, whatever line-bot-sdk's models would say of it.

    The SDK's generated models refuse events LINE itself sends (text without `quoteToken`
    before 2023, bodies without `mode` or `webhookEventId`, message and source types newer
    than the SDK), so the few fields used are read here from the JSON, each checked.
    """
    delivery = raw.get("deliveryContext")
    stamp = raw.get("timestamp")
    token = raw.get("replyToken")
    mode = raw.get("mode")
    return LineEvent(
        type=_str(raw.get("type")) or "",
        event_id=event_id,
        mode=mode if isinstance(mode, str) else "active",
        timestamp=stamp / 1000 if isinstance(stamp, int | float) else time.time(),
        redelivery=isinstance(delivery, dict) and delivery.get("isRedelivery") is True,
        reply_token=token if isinstance(token, str) and token else None,
        chat=chat_of(raw.get("source")),
        raw=raw,
    )


def event_id_of(event: dict[str, Any]) -> str:
    """LINE's webhookEventId; for the old bodies without one, a digest of the event."""
    given = event.get("webhookEventId")
    if isinstance(given, str) and given:
        return given
    canonical = json.dumps(event, sort_keys=True, ensure_ascii=False).encode("utf-8", "replace")
    return "sha256:" + hashlib.sha256(canonical).hexdigest()[:40]


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
    """The chat of an event's source: a group, a room, or the user's 1:1 chat."""
    if not isinstance(source, dict):
        return None
    user = _str(source.get("userId"))
    for field in ("groupId", "roomId"):
        chat = _str(source.get(field))
        if chat:
            return ChatRef(channel="line", chat_id=chat, user_id=user, is_group=True)
    if user:
        return ChatRef(channel="line", chat_id=user, user_id=user)
    return None


def self_mentions(message: dict[str, Any]) -> list[tuple[int, int]]:
    """(index, length) in UTF-16 units of each mention of the bot itself."""
    mention = message.get("mention")
    mentionees = mention.get("mentionees") if isinstance(mention, dict) else None
    spans = []
    for m in mentionees if isinstance(mentionees, list) else []:
        if not isinstance(m, dict) or m.get("isSelf") is not True:
            continue
        index, length = m.get("index"), m.get("length")
        if isinstance(index, int) and isinstance(length, int) and index >= 0 and length > 0:
            spans.append((index, length))
    return spans


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


MEDIA = {
    "image": "photo",
    "video": "video",
    "audio": "voice",
    "file": "file",
    "location": "location",
    "sticker": "sticker",
}
"""LINE message types that are not text, and what the gateway calls them (others keep
their own name)."""


def content_of(message: dict[str, Any]) -> tuple[str | None, tuple[str, ...], str | None]:
    """(media, words LINE gives about it, image set) of a message that is not text."""
    kind = _str(message.get("type")) or "unknown"
    media = MEDIA.get(kind, kind)
    details: list[Any] = []
    if kind == "location":
        details = [message.get("title"), message.get("address")]
        if not any(isinstance(d, str) and d.strip() for d in details):
            lat, lon = message.get("latitude"), message.get("longitude")
            if isinstance(lat, int | float) and isinstance(lon, int | float):
                details = [f"{lat:.5f}, {lon:.5f}"]
    elif kind == "sticker":
        text, keywords = message.get("text"), message.get("keywords")
        if isinstance(text, str) and text.strip():
            details = [text]
        elif isinstance(keywords, list):
            details = keywords[:5]
    image_set = message.get("imageSet")
    album = _str(image_set.get("id")) if isinstance(image_set, dict) else None
    return media, tuple(d.strip() for d in details if isinstance(d, str) and d.strip()), album


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


Content = Callable[[str, int], Awaitable[bytes]]
"""Downloads a message's content by its id, up to a number of bytes (`LineClient.content`)."""
_CONTENT_TYPES = ("image", "audio", "file")


def remote_of(message: dict[str, Any], content: Content) -> Remote | None:
    """The content of an image, audio or file message that LINE holds, ready to download.

    Content an external provider holds (`contentProvider.type` "external") is at a URL the
    sender chose, which the gateway never fetches.
    """
    kind = message.get("type")
    raw_id = message.get("id")
    provider = message.get("contentProvider")
    if kind not in _CONTENT_TYPES or not isinstance(raw_id, str) or not raw_id.isdigit():
        return None
    if isinstance(provider, dict) and provider.get("type", "line") != "line":
        return None
    size = message.get("fileSize")
    duration = message.get("duration")  # milliseconds

    async def fetch(limit: int) -> bytes:
        return await content(raw_id, limit)

    return Remote(
        fetch,
        size=size if isinstance(size, int) and not isinstance(size, bool) else None,
        name=_str(message.get("fileName")),
        duration=duration / 1000 if isinstance(duration, int | float) else None,
    )
