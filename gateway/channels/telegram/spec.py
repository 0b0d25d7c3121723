"""Telegram as the rest of the gateway knows it; imports neither the SDK nor the channel."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.channels.spec import Capabilities, PlatformSpec
from gateway.i18n import N_

if TYPE_CHECKING:
    from gateway.config import Settings


def _configured(settings: Settings) -> bool:
    return settings.telegram_enabled


def _polls(settings: Settings) -> bool:
    return settings.telegram_polling


def _set_polling(settings: Settings, on: bool) -> Settings:
    return settings.model_copy(update={"telegram_polling": on})


SPEC = PlatformSpec(
    name="telegram",
    label="Telegram",
    entry="gateway.channels.telegram.entry",
    configured=_configured,
    needs="TELEGRAM_BOT_TOKEN",
    needs_short="TELEGRAM_BOT_TOKEN",
    settings_prefix="TELEGRAM_",
    user_id=r"[0-9]+",
    user_id_hint="a number",
    user_label=N_("Telegram user {who}"),
    capabilities=Capabilities(edit=True, drafts=True),
    polls=_polls,
    set_polling=_set_polling,
    webhook_secret="TELEGRAM_WEBHOOK_SECRET",
    # A bot token ("<bot id>:<35 characters>") anywhere, e.g. inside a Bot API URL that
    # httpx logs, is masked even when it is not the configured one.
    token_shapes=(r"(?<!\d)\d{5,}:[A-Za-z0-9_-]{30,}",),
    sdk_loggers=("telegram.ext",),
)
