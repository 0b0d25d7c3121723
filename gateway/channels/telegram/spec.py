"""Telegram as the rest of the gateway knows it; imports neither the SDK nor the channel."""

from __future__ import annotations

from gateway.channels.api import N_, Capabilities, PlatformSpec, Setting, id_list
from gateway.channels.telegram.settings import TelegramSettings

USER_ID = r"[0-9]+"

SETTINGS = (
    Setting(
        "TELEGRAM_BOT_TOKEN",
        "the Telegram bot token",
        ask="Telegram bot token (from @BotFather, /newbot):",
        flag="--telegram-token",
        secret=True,
        required=True,
    ),
    Setting(
        "TELEGRAM_ADMIN_IDS",
        "comma-separated Telegram user ids",
        flag="--telegram-admin-ids",
        pattern=id_list(USER_ID),
        hint="comma-separated numeric Telegram user ids",
    ),
    Setting(
        "TELEGRAM_API_BASE_URL", "the Bot API's base URL", default="https://api.telegram.org/bot"
    ),
)

SPEC = PlatformSpec(
    name="telegram",
    label="Telegram",
    entry="gateway.channels.telegram.entry",
    section=TelegramSettings,
    user_id=USER_ID,
    user_id_hint="a number",
    user_label=N_("Telegram user {who}"),
    capabilities=Capabilities(edit=True, drafts=True, speech="opus"),
    # A bot token ("<bot id>:<35 characters>") anywhere, e.g. inside a Bot API URL that
    # httpx logs, is masked even when it is not the configured one.
    token_shapes=(r"(?<!\d)\d{5,}:[A-Za-z0-9_-]{30,}",),
    sdk_loggers=("telegram.ext",),
    settings=SETTINGS,
    setup="gateway.channels.telegram.interview",
)
