"""`skillgate init` for LINE: the credentials checked by the bot info API, the admin by a code."""

from __future__ import annotations

import secrets
from collections.abc import Mapping, MutableMapping

from gateway.channels.api import Asker, ChannelError, Found
from gateway.channels.line import setup
from gateway.channels.line.spec import SETTINGS

_SECRET, _TOKEN, _ADMINS, _API = (s.var for s in SETTINGS)


async def check(values: Mapping[str, str]) -> Found:
    """The bot info API with the access token; ChannelError when LINE refuses it."""
    bot = await setup.bot_info(values[_TOKEN], values[_API])
    return Found(f"{bot.name} ({bot.basic_id})", bot.name, handle=bot.basic_id)


async def interview(ask: Asker, values: MutableMapping[str, str], bot: Found) -> None:
    """LINE posts by webhook only: the public address, then the admin."""
    await ask.public_url()
    values[_ADMINS] = ",".join(await _admin(ask, values, bot))


async def _admin(ask: Asker, values: Mapping[str, str], bot: Found) -> list[str]:
    address = f"{ask.listen_host}:{ask.listen_port}"
    while True:
        how = await ask.select(
            "Your LINE user id, for the admins who review skill proposals:",
            [
                (f"send a code to {bot.name} now (the proxy must forward to {address})", "code"),
                ("paste it (LINE Developers console, Basic settings, Your user ID)", "paste"),
                ("no admin for now", "none"),
            ],
        )
        if how == "paste":
            admins = next(s for s in SETTINGS if s.var == _ADMINS)
            text = await ask.text(
                "LINE user id(s) (U and 32 hex digits), comma-separated:", "", admins.pattern
            )
            return [part.strip() for part in text.split(",")]
        if how == "none":
            return []
        found = await _code(ask, values, bot)
        if found:
            return [found]


async def _code(ask: Asker, values: Mapping[str, str], bot: Found) -> str | None:
    """Point LINE's webhook here, listen briefly, and take the sender of a one-time code."""
    token, api = values[_TOKEN], values[_API]
    try:
        state = await setup.point_webhook(token, api, await ask.public_url())
        if state.changed:
            ask.say(f"  set the LINE webhook URL to {state.endpoint}")
        active = state.active
        while not active:
            ask.say(
                "  'Use webhook' is off, so LINE sends nothing: turn it on in the LINE"
                " Developers console (your channel, Messaging API tab, Webhook settings)."
            )
            if not await ask.yes("Done? (check again)"):
                return None
            active = await setup.webhook_active(token, api)
    except ChannelError as exc:
        ask.say(f"  ✗ {exc}")
        return None
    code = f"{secrets.randbelow(10**6):06d}"
    listener = setup.CodeListener(values[_SECRET], code)
    try:
        await listener.start(ask.listen_host, ask.listen_port)
    except OSError as exc:
        ask.say(
            f"  ✗ cannot listen on {ask.listen_host}:{ask.listen_port}: {exc.strerror}"
            " (is `skillgate serve` running there? stop it while init runs)"
        )
        return None
    try:
        ask.say(
            f"Now send {code} to {bot.name} in LINE (add {bot.handle} as a friend first)."
            f" Waiting up to {ask.wait_seconds:.0f} s ..."
        )
        found = await listener.wait(ask.wait_seconds)
    finally:
        await listener.close()
    if found is None:
        ask.say("  the code did not arrive")
        return None
    user, reply_token = found
    if reply_token:
        try:
            await setup.thank(token, api, user, reply_token)
        except ChannelError as exc:
            ask.say(f"  (could not answer in LINE: {exc})")
    ask.say(f"  ✓ admin: {user}")
    return user
