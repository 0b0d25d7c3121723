"""Quoted media in LINE: a text that quotes an image, audio or file asks about it.

LINE gives a quoting text only the quoted message's id (`quotedMessageId`), and no way to
mention the bot on media itself, so in a group a photo can only be asked about by quoting it.
The last media messages of each chat are therefore remembered (their ids and what LINE
declared, never their content) in the store's meta table, so that the quote can be read as
that media with the text as its caption. Each note names its sender (`from`), so that
/forget takes a member's notes out of a group's (`MEDIA_META`).
"""

from __future__ import annotations

import json
from typing import Any

from gateway.channels.api import MEDIA_META, MEDIA_SENDER, Meta

REMEMBERED = 20
"""Media messages remembered per chat."""
_KEEP = ("id", "type", "fileName", "fileSize", "duration", "contentProvider")
_TYPES = ("image", "audio", "file")
SENDER = MEDIA_SENDER


def _key(chat_id: str) -> str:
    return MEDIA_META.format(channel="line", chat=chat_id)


async def remember(meta: Meta, chat_id: str, message: dict[str, Any], sender: str | None) -> None:
    """Note an image, audio or file message `sender` sent to the chat, so that a quote of it
    can be read."""
    if message.get("type") not in _TYPES or not isinstance(message.get("id"), str):
        return
    known = [m for m in await _known(meta, chat_id) if m.get("id") != message["id"]]
    known.append({**{k: message[k] for k in _KEEP if k in message}, SENDER: sender or ""})
    await meta.set_meta(_key(chat_id), json.dumps(known[-REMEMBERED:], ensure_ascii=False))


async def quoted(meta: Meta, chat_id: str, message: dict[str, Any]) -> dict[str, Any] | None:
    """The media message a text quotes, as remembered, if it quotes one."""
    wanted = message.get("quotedMessageId")
    if not isinstance(wanted, str) or not wanted:
        return None
    return next((m for m in await _known(meta, chat_id) if m.get("id") == wanted), None)


async def _known(meta: Meta, chat_id: str) -> list[dict[str, Any]]:
    raw = await meta.get_meta(_key(chat_id))
    try:
        found = json.loads(raw) if raw else []
    except ValueError:
        return []
    return [m for m in found if isinstance(m, dict)] if isinstance(found, list) else []
