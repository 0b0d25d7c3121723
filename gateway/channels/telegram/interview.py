"""`skillgate init` for Telegram: getMe checks the token, polling or webhook, an admin by /start."""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping, MutableMapping

from gateway.channels.api import Asker, ChannelError, Found
from gateway.channels.telegram import setup
from gateway.channels.telegram.spec import SETTINGS, SPEC

_TOKEN, _ADMINS, _API = (s.var for s in SETTINGS)
_POLLING = SPEC.polling_var or ""


async def check(values: Mapping[str, str]) -> Found:
    """getMe with the token; ChannelError when Telegram refuses it."""
    bot = await setup.bot_info(values[_TOKEN], values[_API])
    return Found(
        f"@{bot.username} ({bot.name})",
        f"@{bot.username}",
        handle=bot.username,
        link=f"https://t.me/{bot.username}",
    )


async def interview(ask: Asker, values: MutableMapping[str, str], bot: Found) -> None:
    """How updates arrive (and, by webhook, where to), then the admin."""
    polling = await ask.select(
        "How should Telegram updates arrive?",
        [
            ("polling: no public address needed (trying it out, a home machine)", True),
            ("webhook: Telegram posts to your https address (a server)", False),
        ],
        default=values.get(_POLLING, "true").lower() in ("true", "1", "yes"),
    )
    values[_POLLING] = "true" if polling else ""
    if not polling:
        await ask.public_url()
    ids = await _admin(ask, values, bot.handle)
    values[_ADMINS] = ",".join(map(str, ids))


async def _admin(ask: Asker, values: Mapping[str, str], username: str) -> list[int]:
    try:
        return await _start(ask, values, username)
    except ChannelError as exc:  # another poller (a running gateway), the network, ...
        ask.say(f"  ✗ {exc}")
        if await ask.yes("Type the admin's user id instead?"):
            return await _typed_ids(ask)
        return []


async def _start(ask: Asker, values: Mapping[str, str], username: str) -> list[int]:
    """The sender of a /start to the bot, read by getUpdates (so a webhook must go first)."""
    token, api, polling = values[_TOKEN], values[_API], bool(values.get(_POLLING))
    url = await setup.webhook_url(token, api)
    if url:
        if polling:
            ask.say(f"  Telegram holds a webhook ({url}); polling has no use for it: removing it.")
        elif not await ask.yes(
            f"Telegram holds a webhook ({url}), and no update can be read while it is set."
            " Remove it for now? (`skillgate set-webhook` registers it again)"
        ):
            return await _typed_ids(ask)
        await setup.remove_webhook(token, api)
    code = secrets.token_hex(4)
    while True:
        ask.say(
            f"Now send /start to @{username} in Telegram (or open"
            f" https://t.me/{username}?start={code}). Waiting up to {ask.wait_seconds:.0f} s ..."
        )
        user = await setup.wait_for_start(
            token, api, code=code, since=time.time(), within=ask.wait_seconds
        )
        if user is not None and (
            user.with_code or await ask.yes(f"Make {user.describe()} an admin?")
        ):
            ask.say(f"  ✓ admin: {user.describe()}")
            return [user.id]
        if user is None:
            ask.say("  no /start arrived")
        what = await ask.select(
            "What now?",
            [
                ("wait for /start again", "wait"),
                ("type the user id", "type"),
                ("no admin for now", "none"),
            ],
        )
        if what == "type":
            return await _typed_ids(ask)
        if what == "none":
            return []


async def _typed_ids(ask: Asker) -> list[int]:
    admins = next(s for s in SETTINGS if s.var == _ADMINS)
    text = await ask.text("Telegram user id(s), comma-separated:", "", admins.pattern)
    return [int(part) for part in text.split(",")]
