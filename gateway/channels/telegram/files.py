"""Downloading what a Telegram user sent: getFile, then the file, through python-telegram-bot.

Only a URL under the Bot API's own file address is fetched: PTB reads a `file_path` that
names a file on this machine from the local disk, so a path the platform answers with is
never opened. The declared size is checked before the download, and the bytes while they
come (`AiohttpRequest.download`, in chunks); the conversation layer bounds the time.
"""

from __future__ import annotations

from typing import Any

from telegram import Bot
from telegram.error import BadRequest, TelegramError

from gateway.channels.api import MB, Fetch, MediaTooBig, MediaUnavailable, Remote
from gateway.channels.telegram.request import AiohttpRequest

BOT_API_LIMIT = 20 * MB
"""The most a bot may download from Telegram's own Bot API server."""


FIELDS = {
    "voice": "voice",
    "audio": "audio",
    "video note": "video_note",
    "photo": "photo",
    "file": "document",
}
"""The message field holding each medium the gateway reads."""


def remote_of(raw: dict[str, Any], media: str | None, bot: Bot) -> Remote | None:
    """The file of a voice note, audio, video note, photo or document, ready to download.

    Read from the raw message, so that an update PTB refuses (and the gateway salvages)
    still has its file.
    """
    field = raw.get(FIELDS.get(media or "", ""))
    if media == "photo" and isinstance(field, list):
        sizes = [p for p in field if isinstance(p, dict) and _str(p.get("file_id"))]
        if not sizes:
            return None
        field = max(sizes, key=lambda p: (_int(p.get("width")) or 0) * (_int(p.get("height")) or 0))
    if not isinstance(field, dict) or not _str(field.get("file_id")):
        return None
    duration = field.get("duration")
    return Remote(
        _fetch(bot, field["file_id"]),
        size=_int(field.get("file_size")),
        name=_str(field.get("file_name")),
        duration=float(duration) if isinstance(duration, int | float) else None,
        width=_int(field.get("width")),
        height=_int(field.get("height")),
    )


def _fetch(bot: Bot, file_id: str) -> Fetch:
    async def fetch(limit: int) -> bytes:
        try:
            file = await bot.get_file(file_id)
        except BadRequest as exc:
            if "too big" in exc.message.lower():  # "file is too big": over the Bot API's 20 MB
                raise MediaTooBig(exc.message, min(limit, BOT_API_LIMIT)) from exc
            raise MediaUnavailable(f"getFile failed: {exc.message}") from exc
        except TelegramError as exc:
            raise MediaUnavailable(f"getFile failed: {type(exc).__name__}") from exc
        if file.file_size is not None and file.file_size > limit:
            raise MediaTooBig(f"getFile says {file.file_size} bytes", limit)
        if not (file.file_path or "").startswith(bot.base_file_url + "/"):
            raise MediaUnavailable("getFile answered a path outside the Bot API's file address")
        request = bot.request
        if not isinstance(request, AiohttpRequest):
            raise MediaUnavailable("downloads need the gateway's own Bot API client")
        return await request.download(file.file_path or "", limit)

    return fetch


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
