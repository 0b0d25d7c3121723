"""Raw Telegram updates before they are stored: a bounded read, a strict parse, the queue key."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

WEBHOOK_PATH = "/webhook/telegram"
MAX_UPDATE_BYTES = 1024 * 1024
"""Telegram's updates are a few KB; anything near this is not from Telegram."""

_MESSAGE_KEYS = ("message", "edited_message", "channel_post", "edited_channel_post")


async def read_bounded(request: web.Request, limit: int) -> bytes | None:
    """The request body, or None as soon as it is longer than `limit` bytes."""
    if request.content_length is not None and request.content_length > limit:
        return None
    body = bytearray()
    async for chunk in request.content.iter_chunked(64 * 1024):
        body += chunk
        if len(body) > limit:
            return None
    return bytes(body)


async def read_update(request: web.Request) -> tuple[dict[str, Any] | None, int, str]:
    """(update, 200, "") for a well-formed body, else (None, status, what is wrong)."""
    body = await read_bounded(request, MAX_UPDATE_BYTES)
    if body is None:
        return None, 413, f"update larger than {MAX_UPDATE_BYTES} bytes"
    try:
        update = json.loads(body)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError too
        return None, 400, "body is not JSON"
    if not isinstance(update, dict) or not _is_int(update.get("update_id")):
        return None, 400, "not a Telegram update: no integer update_id"
    return update, 200, ""


def chat_key(update: dict[str, Any]) -> str:
    """The inbox key: a chat's messages share one (answered in order); a press has its own."""
    update_id = update["update_id"]
    if "callback_query" in update:
        return f"cb:{update_id}"
    for key in _MESSAGE_KEYS:
        message = update.get(key)
        chat = message.get("chat") if isinstance(message, dict) else None
        if isinstance(chat, dict) and _is_int(chat.get("id")):
            return str(chat["id"])
    return f"u:{update_id}"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
