"""Doctor's Telegram checks: is the bot known, and does its webhook reach us?"""

from __future__ import annotations

import time
from datetime import datetime

from gateway.channels.api import (
    SET_PUBLIC_URL,
    SET_WEBHOOK,
    ChannelError,
    Check,
    ConfigError,
    Settings,
    public_endpoint,
)
from gateway.channels.telegram.operator import secret_fingerprint, telegram_bot, telegram_errors
from gateway.channels.telegram.settings import TelegramSettings
from gateway.channels.telegram.updates import WEBHOOK_PATH as TELEGRAM_PATH

BACKLOG_WARN = 100
RECENT_ERROR_SECONDS = 3600


def delivery_fix(error: str) -> str:
    """What to do about Telegram's last_error_message."""
    text = error.lower()
    if "401" in text or "403" in text:
        return f"the secret Telegram sends is not TELEGRAM_WEBHOOK_SECRET: {SET_WEBHOOK}"
    if "ssl" in text or "certificate" in text:
        return "the reverse proxy's TLS certificate is not trusted: check its certificate chain"
    if "404" in text:
        return "the reverse proxy does not forward /webhook/telegram to the gateway: check it"
    return (
        "check that the service and the reverse proxy are running"
        " (`systemctl status skillgate caddy`) and that DNS points to this server"
    )


async def telegram_checks(settings: Settings, registered_secret: str | None) -> list[Check]:
    """getMe and getWebhookInfo; `registered_secret` is the fingerprint set-webhook stored."""
    tg = settings.section(TelegramSettings)
    try:
        async with telegram_errors(settings), telegram_bot(settings) as bot:
            me = f"@{bot.username} (id {bot.id})"
            reads_groups = bot.can_read_all_group_messages
            info = await bot.get_webhook_info()
    except ChannelError as exc:
        fix = (
            "copy the token again from @BotFather (/mybots, your bot, API Token) and run"
            " `skillgate init`, which checks it"
            if "TELEGRAM_BOT_TOKEN" in str(exc)
            else "check the server's outbound HTTPS and TELEGRAM_API_BASE_URL"
        )
        return [Check("telegram bot", "fail", str(exc), fix)]
    checks = [Check("telegram bot", "ok", me)]
    if settings.group_context_messages > 0 and not reads_groups:
        checks.append(
            Check(
                "telegram groups",
                "warn",
                "privacy mode is on: in groups the bot gets only messages addressed to it, so"
                " SKILLGATE_GROUP_CONTEXT_MESSAGES has nothing to keep",
                "in @BotFather: /mybots, your bot, Bot Settings, Group Privacy, Turn off; then"
                " remove the bot from each group and add it again",
            )
        )
    if tg.telegram_polling:
        checks.append(_polling(info.url, info.pending_update_count))
        return checks
    try:
        expected = public_endpoint(settings, TELEGRAM_PATH)
    except ConfigError as exc:
        checks.append(Check("telegram webhook", "fail", str(exc), SET_PUBLIC_URL))
        return checks
    pending = info.pending_update_count
    if not info.url:
        checks.append(
            Check(
                "telegram webhook",
                "fail",
                "no webhook registered: updates wait at Telegram",
                SET_WEBHOOK,
            )
        )
    elif info.url != expected:
        checks.append(
            Check("telegram webhook", "fail", f"points to {info.url}, not {expected}", SET_WEBHOOK)
        )
    elif registered_secret and registered_secret != secret_fingerprint(settings):
        checks.append(
            Check(
                "telegram webhook",
                "fail",
                "TELEGRAM_WEBHOOK_SECRET changed since the webhook was registered: posts get 401",
                SET_WEBHOOK,
            )
        )
    elif info.last_error_message and (pending or _recent(info.last_error_date)):
        checks.append(
            Check(
                "telegram webhook",
                "fail",
                f"delivery failing: {info.last_error_message} ({pending} update(s) pending)",
                delivery_fix(info.last_error_message),
            )
        )
    elif pending >= BACKLOG_WARN:
        checks.append(
            Check(
                "telegram webhook",
                "warn",
                f"{info.url}: {pending} updates pending",
                "check that the gateway answers (GET /healthz) and keeps up",
            )
        )
    else:
        checks.append(Check("telegram webhook", "ok", f"{info.url}, {pending} pending"))
    return checks


def _polling(url: str | None, pending: int) -> Check:
    """With polling the webhook must be gone; serve removes one at start, so it only warns."""
    if url:
        return Check(
            "telegram webhook",
            "warn",
            f"{url} is registered, but the gateway polls: `skillgate serve` removes it at start",
            "run `skillgate set-webhook --delete` (or set TELEGRAM_POLLING=false to use it)",
        )
    return Check("telegram webhook", "ok", f"none: updates by polling, {pending} pending")


def _recent(when: datetime | None) -> bool:
    return when is not None and time.time() - when.timestamp() < RECENT_ERROR_SECONDS
