"""Downloading what a Telegram user sent: getFile, then the file, through python-telegram-bot.

Only a URL under the Bot API's own file address is fetched: PTB reads a `file_path` that
names a file on this machine from the local disk, so a path the platform answers with is
never opened. The declared size is checked before the download and the bytes after it;
the conversation layer bounds the time.
"""

from __future__ import annotations

from typing import Any

from telegram import Bot
from telegram import Message as TgMessage
from telegram.error import BadRequest, TelegramError

from gateway.errors import MediaTooBig, MediaUnavailable
from gateway.media.remote import MB, Fetch, Remote

BOT_API_LIMIT = 20 * MB
"""The most a bot may download from Telegram's own Bot API server."""


def remote_of(message: TgMessage, bot: Bot) -> Remote | None:
    """The file of a voice note, audio, video note, photo or document, ready to download."""
    if message.voice is not None:
        voice = message.voice
        return Remote(_fetch(bot, voice.file_id), voice.file_size, duration=_seconds(voice))
    if message.audio is not None:
        audio = message.audio
        return Remote(_fetch(bot, audio.file_id), audio.file_size, audio.file_name, _seconds(audio))
    if message.video_note is not None:
        note = message.video_note
        return Remote(_fetch(bot, note.file_id), note.file_size, duration=_seconds(note))
    if message.photo:
        largest = max(message.photo, key=lambda p: p.width * p.height)
        return Remote(
            _fetch(bot, largest.file_id),
            largest.file_size,
            width=largest.width,
            height=largest.height,
        )
    if message.document is not None:
        doc = message.document
        return Remote(_fetch(bot, doc.file_id), doc.file_size, doc.file_name)
    return None


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
        try:
            data = await file.download_as_bytearray()
        except TelegramError as exc:
            raise MediaUnavailable(f"the download failed: {type(exc).__name__}") from exc
        if len(data) > limit:
            raise MediaTooBig(f"downloaded {len(data)} bytes", limit)
        return bytes(data)

    return fetch


def _seconds(media: Any) -> float | None:
    """A duration (an int or, with PTB_TIMEDELTA, a timedelta) in seconds."""
    value = getattr(media, "duration", None)
    if value is None:
        return None
    seconds = getattr(value, "total_seconds", None)
    return float(seconds() if callable(seconds) else value)
