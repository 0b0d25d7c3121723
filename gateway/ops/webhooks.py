"""`skillgate set-webhook`: register the platforms' webhooks (and Telegram's commands).

Each setting is read back first and only written when it differs, because
Telegram rate-limits setWebhook. Telegram never reveals the secret token it
holds, so a keyed hash of the last one registered is kept in the database to
notice a changed TELEGRAM_WEBHOOK_SECRET. The server itself never registers
anything at start-up. The SDKs are imported inside the functions (start-up cost).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gateway.channels.telegram.updates import ALLOWED_UPDATES, COMMANDS
from gateway.channels.telegram.updates import WEBHOOK_PATH as TELEGRAM_PATH
from gateway.config import Settings
from gateway.conversation.review import ADMIN_COMMANDS
from gateway.errors import ChannelError, ConfigError
from gateway.ops.platforms import line_api, line_errors, telegram_bot, telegram_errors

if TYPE_CHECKING:
    from telegram import Bot

    from gateway.store import Store

LINE_PATH = "/webhook/line"
SECRET_META = "telegram_webhook_secret_hmac"
LINE_TIMEOUT = 15.0
LINE_TEST_TIMEOUT = 30.0


@dataclass
class Step:
    """One thing set-webhook did or found."""

    name: str
    status: str  # set | unchanged | deleted | absent | ok | warn | fail
    detail: str

    def line(self) -> str:
        return f"{self.name}: {self.status} {self.detail}".rstrip()


def public_endpoint(settings: Settings, path: str) -> str:
    """SKILLGATE_PUBLIC_URL + path; the platforms post to HTTPS only."""
    base = settings.public_url
    if base is None:
        raise ConfigError(
            "SKILLGATE_PUBLIC_URL is not set: set it to the https:// address of your server"
        )
    if not base.startswith("https://"):
        raise ConfigError("SKILLGATE_PUBLIC_URL must start with https:// (Telegram and LINE)")
    return base + path


def secret_fingerprint(settings: Settings) -> str:
    """A keyed hash of the webhook secret (the bot token is the key); never the secret."""
    assert settings.telegram_bot_token is not None
    if settings.telegram_webhook_secret is None:
        return ""
    key = settings.telegram_bot_token.get_secret_value().encode()
    secret = settings.telegram_webhook_secret.get_secret_value().encode()
    return hmac.new(key, secret, hashlib.sha256).hexdigest()


async def telegram_register(
    settings: Settings, store: Store, *, max_connections: int = 40, force: bool = False
) -> list[Step]:
    """Set the Telegram webhook and commands where they differ from what is wanted."""
    from telegram import BotCommand

    url = public_endpoint(settings, TELEGRAM_PATH)
    if settings.telegram_webhook_secret is None:
        raise ConfigError("TELEGRAM_WEBHOOK_SECRET is not set: the gateway would refuse every post")
    fingerprint = secret_fingerprint(settings)
    steps: list[Step] = []
    async with telegram_errors(settings), telegram_bot(settings) as bot:
        steps.append(Step("telegram bot", "ok", f"@{bot.username}"))
        info = await bot.get_webhook_info()
        same = (
            info.url == url
            and info.max_connections == max_connections
            and set(info.allowed_updates or ()) == set(ALLOWED_UPDATES)
            and await store.get_meta(SECRET_META) == fingerprint
        )
        if same and not force:
            steps.append(
                Step(
                    "telegram webhook", "unchanged", f"{url} ({info.pending_update_count} pending)"
                )
            )
            if info.last_error_message:
                when = f"{info.last_error_date:%Y-%m-%d %H:%M} UTC" if info.last_error_date else ""
                steps.append(
                    Step(
                        "telegram webhook", "warn", f"last error {when}: {info.last_error_message}"
                    )
                )
        else:
            await bot.set_webhook(
                url,
                secret_token=settings.telegram_webhook_secret.get_secret_value(),
                allowed_updates=list(ALLOWED_UPDATES),
                max_connections=max_connections,
                drop_pending_updates=False,
            )
            await store.set_meta(SECRET_META, fingerprint)
            steps.append(
                Step(
                    "telegram webhook",
                    "set",
                    f"{url} with the secret token, max_connections={max_connections},"
                    f" allowed_updates={','.join(ALLOWED_UPDATES)}",
                )
            )
        current = [(c.command, c.description) for c in await bot.get_my_commands()]
        names = ", ".join(f"/{name}" for name, _ in COMMANDS)
        if current == list(COMMANDS) and not force:
            steps.append(Step("telegram commands", "unchanged", names))
        else:
            await bot.set_my_commands([BotCommand(name, text) for name, text in COMMANDS])
            steps.append(Step("telegram commands", "set", names))
        steps += await admin_commands(settings, bot, force=force)
    return steps


async def admin_commands(settings: Settings, bot: Bot, *, force: bool = False) -> list[Step]:
    """The admins' own command menu: the public commands plus the review commands."""
    from telegram import BotCommand, BotCommandScopeChat
    from telegram.error import BadRequest, Forbidden

    menu = [*COMMANDS, *ADMIN_COMMANDS]
    names = ", ".join(f"/{name}" for name, _ in ADMIN_COMMANDS)
    steps: list[Step] = []
    changed = 0
    for admin in settings.telegram_admin_ids:
        scope = BotCommandScopeChat(admin)
        try:
            current = [(c.command, c.description) for c in await bot.get_my_commands(scope=scope)]
            if current == menu and not force:
                continue
            await bot.set_my_commands([BotCommand(n, text) for n, text in menu], scope=scope)
            changed += 1
        except (BadRequest, Forbidden) as exc:
            # Telegram knows a private chat only once the person has written to the bot.
            steps.append(
                Step(
                    "telegram admin commands",
                    "warn",
                    f"admin {admin}: {exc.message}; they should send /start to the bot",
                )
            )
    if settings.telegram_admin_ids:
        status = "set" if changed else "unchanged"
        count = len(settings.telegram_admin_ids)
        steps.insert(0, Step("telegram admin commands", status, f"{names} for {count} admin(s)"))
    return steps


async def telegram_unregister(settings: Settings, store: Store) -> list[Step]:
    """Remove the Telegram webhook (pending updates are kept)."""
    async with telegram_errors(settings), telegram_bot(settings) as bot:
        info = await bot.get_webhook_info()
        if not info.url:
            return [Step("telegram webhook", "absent", "no webhook was registered")]
        await bot.delete_webhook(drop_pending_updates=False)
    await store.set_meta(SECRET_META, "")
    return [Step("telegram webhook", "deleted", f"{info.url} (pending updates kept)")]


async def line_register(settings: Settings, *, force: bool = False) -> list[Step]:
    """Set the LINE webhook endpoint if it differs, then run LINE's webhook test."""
    from linebot.v3.messaging import SetWebhookEndpointRequest, TestWebhookEndpointRequest

    url = public_endpoint(settings, LINE_PATH)
    steps: list[Step] = []
    async with line_errors(settings), line_api(settings) as api:
        current = await api.get_webhook_endpoint(_request_timeout=LINE_TIMEOUT)
        if current.endpoint == url and not force:
            steps.append(Step("line webhook", "unchanged", url))
        else:
            request = SetWebhookEndpointRequest(endpoint=url)
            await api.set_webhook_endpoint(request, _request_timeout=LINE_TIMEOUT)
            steps.append(Step("line webhook", "set", url))
        if not current.active:
            steps.append(
                Step(
                    "line webhook",
                    "warn",
                    "'Use webhook' is off, so LINE sends nothing: turn it on in the LINE"
                    " Developers console (your channel, Messaging API tab, Webhook settings)",
                )
            )
        result = await api.test_webhook_endpoint(
            TestWebhookEndpointRequest(endpoint=url), _request_timeout=LINE_TEST_TIMEOUT
        )
        outcome = f"{result.status_code} {result.reason}".strip()
        if result.success:
            steps.append(Step("line webhook test", "ok", f"LINE reached {url}: {outcome}"))
        else:
            steps.append(
                Step(
                    "line webhook test",
                    "fail",
                    f"LINE could not deliver to {url}: {outcome} {result.detail}".rstrip()
                    + "; is the service running and the reverse proxy forwarding /webhook/line?",
                )
            )
    return steps


async def line_unregister(settings: Settings) -> list[Step]:
    """LINE has no call that removes a webhook URL: say where to switch it off."""
    async with line_errors(settings), line_api(settings) as api:
        current = await api.get_webhook_endpoint(_request_timeout=LINE_TIMEOUT)
    if not current.active:
        return [Step("line webhook", "absent", "'Use webhook' is already off")]
    return [
        Step(
            "line webhook",
            "warn",
            f"still {current.endpoint}: the Messaging API cannot remove it; turn off"
            " 'Use webhook' in the LINE Developers console (Messaging API tab)",
        )
    ]


@asynccontextmanager
async def _store(settings: Settings) -> AsyncIterator[Store]:
    from gateway.store import store_for

    async with store_for(settings) as store:
        yield store


async def run_set_webhook(
    settings: Settings, *, delete: bool = False, max_connections: int = 40, force: bool = False
) -> int:
    """Print one line per step; exit status 1 when anything failed."""
    if not settings.telegram_enabled and not settings.line_enabled:
        print("set-webhook: no channel configured (TELEGRAM_BOT_TOKEN, LINE_CHANNEL_*)")
        return 1
    jobs: list[tuple[str, Callable[[], Awaitable[list[Step]]]]] = []
    if settings.telegram_enabled:
        jobs.append(("telegram", lambda: _telegram_job(settings, delete, max_connections, force)))
    if settings.line_enabled:
        if delete:
            jobs.append(("line", lambda: line_unregister(settings)))
        else:
            jobs.append(("line", lambda: line_register(settings, force=force)))
    failed = False
    for name, job in jobs:
        try:
            steps = await job()
        except (ConfigError, ChannelError) as exc:
            print(f"{name}: fail {exc}")
            failed = True
            continue
        for step in steps:
            print(step.line())
            failed = failed or step.status == "fail"
    return 1 if failed else 0


async def _telegram_job(
    settings: Settings, delete: bool, max_connections: int, force: bool
) -> list[Step]:
    async with _store(settings) as store:
        if delete:
            return await telegram_unregister(settings, store)
        return await telegram_register(
            settings, store, max_connections=max_connections, force=force
        )
