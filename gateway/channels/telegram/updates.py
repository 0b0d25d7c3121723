"""Reading Telegram updates: its webhook (the shared one, with its secret header), the inbox
key, who is addressed."""

from __future__ import annotations

import hmac
import json
import re
from typing import Any

from aiohttp import web
from pydantic import SecretStr

from gateway.channels.api import Intake, Refused, Update, Webhook
from gateway.channels.telegram.incoming import Incoming
from gateway.channels.telegram.spec import SPEC

WEBHOOK_PATH = SPEC.route
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
ALLOWED_UPDATES = ("message", "callback_query")
"""The update types the channel handles; `skillgate set-webhook` asks Telegram for these only."""

_MESSAGE_KEYS = ("message", "edited_message", "channel_post", "edited_channel_post")
_MEDIA = {
    "venue": "location",
    "location": "location",
    "sticker": "sticker",
    "photo": "photo",
    "animation": "animation",
    "video": "video",
    "video_note": "video note",
    "voice": "voice",
    "audio": "audio",
    "document": "file",
    "contact": "contact",
    "poll": "poll",
    "dice": "dice",
    "game": "game",
    "story": "story",
    "paid_media": "paid media",
    "invoice": "invoice",
    "checklist": "checklist",
}
"""Message fields that hold something other than words, and what the gateway calls it
(the first present wins: a venue also carries its location)."""


class TelegramWebhook(Webhook):
    """Telegram's posts: its secret header, then one update per body."""

    answer = b'{"ok":true}'

    def __init__(self, secret: SecretStr | None) -> None:
        super().__init__(SPEC.name)
        self.secret = None if secret is None else secret.get_secret_value().encode()

    def credentials(self, request: web.Request) -> None:
        got = request.headers.get(SECRET_HEADER, "")
        if self.secret is None or not hmac.compare_digest(
            got.encode("utf-8", "surrogatepass"), self.secret
        ):
            raise Refused(401, "missing or wrong secret token")

    def updates(self, body: Any) -> list[Update]:
        if not isinstance(body, dict) or not _is_int(body.get("update_id")):
            raise ValueError("no integer update_id")
        return [Update(str(body["update_id"]), chat_key(body), body)]


async def accept(intake: Intake, update: dict[str, Any], payload: str | None = None) -> bool:
    """Store one update (raw Bot API JSON, `payload` if made already); False when seen before."""
    if payload is None:
        payload = json.dumps(update, ensure_ascii=False, separators=(",", ":"))
    key = chat_key(update)
    return await intake.accept(SPEC.name, str(update["update_id"]), key, payload)


def chat_key(update: dict[str, Any]) -> str:
    """The inbox key: a chat's messages share one (answered in order); presses get their own.

    Presses on one message share a key, so a quick 👍 then 👎 is stored in that order, but
    never the chat's key: a press must not wait behind an answer being written.
    """
    update_id = update["update_id"]
    query = update.get("callback_query")
    if query is not None:
        message = query.get("message") if isinstance(query, dict) else None
        if isinstance(message, dict) and isinstance(message.get("chat"), dict):
            return f"cb:{message['chat'].get('id')}:{message.get('message_id')}"
        return f"cb:{update_id}"
    for key in _MESSAGE_KEYS:
        message = update.get(key)
        chat = message.get("chat") if isinstance(message, dict) else None
        if isinstance(chat, dict) and _is_int(chat.get("id")):
            return str(chat["id"])
    return f"u:{update_id}"


def media_of(raw: dict[str, Any]) -> tuple[str | None, tuple[str, ...]]:
    """What a raw message holds besides words, and the words Telegram gives about it."""
    for key, media in _MEDIA.items():
        value = raw.get(key)
        if value is None:
            continue
        details: tuple[Any, ...] = ()
        if key == "venue" and isinstance(value, dict):
            details = (value.get("title"), value.get("address"))
        elif key == "location" and isinstance(value, dict):
            details = (_coordinates(value),)
        elif key == "sticker" and isinstance(value, dict):
            details = (value.get("emoji"),)
        return media, tuple(d for d in details if isinstance(d, str) and d)
    return None, ()


def _coordinates(location: dict[str, Any]) -> str | None:
    lat, lon = location.get("latitude"), location.get("longitude")
    if isinstance(lat, int | float) and isinstance(lon, int | float):
        return f"{lat:.5f}, {lon:.5f}"
    return None


_ADDRESSING = frozenset(("mention", "text_mention", "bot_command"))
_COMMAND = frozenset(("bot_command",))


def addressed(message: Incoming, bot_id: int, username: str) -> bool:
    """Whether a group message is for the bot: it is mentioned, replied to or given a command."""
    username = username.lower()
    for entity, value in message.spans(_ADDRESSING):
        # Usernames are case-insensitive on Telegram.
        if entity.type == "mention" and value[1:].lower() == username:
            return True
        if entity.type == "text_mention" and entity.user_id == bot_id:
            return True
        if entity.type == "bot_command" and entity.offset == 0:
            target = value.partition("@")[2]
            if not target or target.lower() == username:
                return True
    replied = message.reply_to
    if replied is None or replied.sender is None or replied.sender.id != bot_id:
        return False
    # In a forum every message replies to its topic's first message; that is no reply to us.
    return not (message.is_topic_message and replied.message_id == message.thread_id)


def command_of(message: Incoming, username: str) -> str | None:
    """The command starting the message ("/new", "/help@this_bot"), unless meant for another bot.

    Telegram's apps mark a command with a `bot_command` entity; an update without any
    entity (the Bot API documentation's own `/start` test update, sent with curl) is read
    by the same rule from its text.
    """
    found = [
        value for entity, value in message.spans(_COMMAND, caption=False) if entity.offset == 0
    ]
    if not found and not message.entities and message.text:
        bare = _BARE_COMMAND.match(message.text)
        found = [bare.group(0)] if bare else []
    for value in found:
        name, _, target = value[1:].partition("@")
        if target and target.lower() != username.lower():
            return None
        return name.lower()
    return None


_BARE_COMMAND = re.compile(r"/[A-Za-z0-9_]{1,32}(?:@[A-Za-z0-9_]{1,64})?(?=\s|$)")
"""A command as Telegram's apps would have marked it: at the start, up to a space or the end."""


def without_mention(text: str, username: str) -> str:
    """The text with "@bot" taken out, as the model needs no reminder of its own name."""
    stripped = re.sub(rf"(?i)@{re.escape(username)}\b", "", text).strip() if username else text
    return stripped or text


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
