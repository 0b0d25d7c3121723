"""`skillgate init` for Telegram: check a bot token, and learn an admin's user id from /start.

The id comes from getUpdates, which Telegram refuses while a webhook is set, so the
webhook is looked at first and removed only when the caller agrees. Updates are read
without confirming them (no offset): the gateway answers them once it runs, so nothing
anyone sent the bot meanwhile is lost.
"""

from __future__ import annotations

import asyncio
import time
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from telegram import Bot
from telegram.error import InvalidToken, NetworkError, TelegramError
from telegram.warnings import PTBUserWarning

from gateway.channels.api import ChannelError, mask
from gateway.channels.telegram.spec import SPEC
from gateway.channels.telegram.updates import ALLOWED_UPDATES

POLL_SECONDS = 10
IDLE_PAUSE = 1.0
"""Between two getUpdates that returned only updates already looked at (nothing confirmed)."""
CLOCK_SLACK = 30
"""A /start sent this many seconds before the question still counts (clocks differ)."""


@dataclass(frozen=True)
class TelegramBotInfo:
    """What getMe says about the bot."""

    id: int
    username: str
    name: str


@dataclass(frozen=True)
class TelegramUser:
    """Who sent /start."""

    id: int
    name: str
    username: str | None
    with_code: bool
    """The message carried the one-time code (the t.me deep link): surely the one asked."""

    def describe(self) -> str:
        handle = f" (@{self.username})" if self.username else ""
        return f"{self.name}{handle}, id {self.id}"


@asynccontextmanager
async def _bot(token: str, base_url: str) -> AsyncIterator[Bot]:
    try:
        async with Bot(token, base_url=base_url) as bot:
            yield bot
    except InvalidToken as exc:
        raise ChannelError("Telegram does not know this token") from exc
    except NetworkError as exc:
        raise ChannelError(f"cannot reach the Bot API: {_clean(token, exc.message)}") from exc
    except TelegramError as exc:
        raise ChannelError(f"Telegram: {_clean(token, exc.message)}") from exc


async def bot_info(token: str, base_url: str) -> TelegramBotInfo:
    """getMe for `token`; ChannelError saying why when Telegram refuses it."""
    if ":" not in token:
        raise ChannelError("a bot token looks like 123456789:AA... (from @BotFather)")
    async with _bot(token, base_url) as bot:
        return TelegramBotInfo(bot.id, bot.username, bot.first_name)


async def webhook_url(token: str, base_url: str) -> str:
    """The webhook Telegram holds for the bot ("" when none)."""
    async with _bot(token, base_url) as bot:
        return (await bot.get_webhook_info()).url or ""


async def remove_webhook(token: str, base_url: str) -> None:
    """Delete the webhook; pending updates stay (the gateway answers them later)."""
    async with _bot(token, base_url) as bot:
        await bot.delete_webhook(drop_pending_updates=False)


async def wait_for_start(
    token: str, base_url: str, *, code: str, since: float, within: float
) -> TelegramUser | None:
    """The first private /start sent after `since` (or carrying `code`); None after `within` s."""
    deadline = time.monotonic() + within
    seen: set[int] = set()
    async with _bot(token, base_url) as bot:
        while (left := deadline - time.monotonic()) > 0:
            updates = await _updates(bot, timeout=max(1, min(POLL_SECONDS, int(left))))
            fresh = [u for u in updates if u.get("update_id") not in seen]
            for update in fresh:
                seen.add(update["update_id"])
                user = start_sender(update, code=code, since=since)
                if user is not None:
                    return user
            if updates and not fresh:
                await asyncio.sleep(IDLE_PAUSE)  # only old updates: they come back at once
    return None


async def _updates(bot: Bot, *, timeout: int) -> list[dict[str, Any]]:
    """getUpdates as raw JSON without an offset: nothing is confirmed."""
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Please use 'Bot.getUpdates'", PTBUserWarning)
            result = await bot.do_api_request(
                "getUpdates",
                # The bot keeps the list it was last given: the gateway's own, then.
                api_kwargs={"timeout": timeout, "allowed_updates": list(ALLOWED_UPDATES)},
                read_timeout=timeout + 10,
            )
    except TelegramError as exc:
        raise ChannelError(f"Telegram: {_clean(bot.token, exc.message)}") from exc
    if not isinstance(result, list):
        return []
    return [u for u in result if isinstance(u, dict) and isinstance(u.get("update_id"), int)]


def _clean(token: str, text: str) -> str:
    """An error of the Bot API without the token or anything shaped like one."""
    return mask(text, [token], SPEC.token_shapes)


def start_sender(update: dict[str, Any], *, code: str, since: float) -> TelegramUser | None:
    """The sender of a private-chat /start in `update`, if it is one that counts."""
    message = update.get("message")
    if not isinstance(message, dict):
        return None
    chat, sender, text = message.get("chat"), message.get("from"), message.get("text")
    if not (isinstance(chat, dict) and isinstance(sender, dict) and isinstance(text, str)):
        return None
    if chat.get("type") != "private" or sender.get("is_bot"):
        return None
    command, _, argument = text.strip().partition(" ")
    if command.split("@")[0] != "/start" or not isinstance(sender.get("id"), int):
        return None
    with_code = argument.strip() == code
    date = message.get("date")
    if not with_code and isinstance(date, int) and date < since - CLOCK_SLACK:
        return None  # an old /start, from before the question
    name = " ".join(str(sender.get(k, "")) for k in ("first_name", "last_name")).strip()
    username = sender.get("username")
    return TelegramUser(
        sender["id"],
        name or str(sender["id"]),
        username if isinstance(username, str) else None,
        with_code,
    )
