"""What the rest of the gateway uses of Telegram: the channel, doctor's checks, set-webhook.

The registry imports this module only when TELEGRAM_BOT_TOKEN is set.
"""

from __future__ import annotations

from gateway.channels.api import Channel, Check, Settings, SkillgateError, Step, store_for
from gateway.channels.telegram.channel import TelegramChannel
from gateway.channels.telegram.checks import telegram_checks
from gateway.channels.telegram.operator import (
    SECRET_META,
    telegram_register,
    telegram_unregister,
)
from gateway.channels.telegram.settings import TelegramSettings


def channel(settings: Settings) -> Channel:
    return TelegramChannel(settings)


def settings_checks(settings: Settings) -> list[Check]:
    """What the settings alone tell about the channel."""
    tg = settings.section(TelegramSettings)
    if tg.telegram_polling:
        return [Check("telegram", "ok", "bot token set; updates by polling")]
    if tg.telegram_webhook_secret is None:
        return [
            Check(
                "telegram",
                "fail",
                "TELEGRAM_WEBHOOK_SECRET is not set: webhooks get 401",
                "run `skillgate doctor --fix` (generates TELEGRAM_WEBHOOK_SECRET into the env file"
                " and registers it), or poll instead: TELEGRAM_POLLING=true",
            )
        ]
    return [Check("telegram", "ok", "bot token and webhook secret set")]


async def live_checks(settings: Settings) -> list[Check]:
    """getMe and the webhook Telegram holds, against what set-webhook registered."""
    known = settings.shared_database or settings.db_path.exists()
    return await telegram_checks(settings, await registered_secret(settings) if known else None)


async def registered_secret(settings: Settings) -> str | None:
    """The webhook secret fingerprint `set-webhook` stored, if any."""
    try:
        async with store_for(settings) as store:
            return await store.get_meta(SECRET_META)
    except SkillgateError:
        return None


async def webhook_steps(
    settings: Settings, *, delete: bool, max_connections: int, force: bool
) -> list[Step]:
    """Register (or with `delete`, remove) the webhook, and the command menus."""
    async with store_for(settings) as store:
        if delete:
            return await telegram_unregister(settings, store)
        return await telegram_register(
            settings, store, max_connections=max_connections, force=force
        )
