"""Telegram's settings (`TELEGRAM_*`): read with `settings.section(TelegramSettings)`."""

from __future__ import annotations

import re
from typing import ClassVar, Literal

from pydantic import Field, SecretStr, field_validator

from gateway.channels.api import Ids, PlatformSettings


class TelegramSettings(PlatformSettings):
    """The bot's token and webhook secret, where the Bot API is, who may chat and review."""

    title = "Telegram"
    operator = frozenset({"telegram_bot_token", "telegram_webhook_secret", "telegram_admin_ids"})
    polling_field: ClassVar[str | None] = "telegram_polling"
    webhook_secret_field: ClassVar[str | None] = "telegram_webhook_secret"

    telegram_bot_token: SecretStr | None = Field(None, validation_alias="TELEGRAM_BOT_TOKEN")
    telegram_webhook_secret: SecretStr | None = Field(
        None, validation_alias="TELEGRAM_WEBHOOK_SECRET"
    )
    telegram_api_base_url: str = Field(
        "https://api.telegram.org/bot", validation_alias="TELEGRAM_API_BASE_URL"
    )
    telegram_admin_ids: Ids[int] = Field(
        default_factory=list, validation_alias="TELEGRAM_ADMIN_IDS"
    )
    telegram_allowed_user_ids: Ids[int] = Field(
        default_factory=list, validation_alias="TELEGRAM_ALLOWED_USER_IDS"
    )
    telegram_polling: bool = Field(False, validation_alias="TELEGRAM_POLLING")
    # Streaming answers (docs/PLATFORMS.md): private chats show drafts unless `off`; groups
    # and forum topics, where drafts do not exist, get one message edited in place only with
    # `edit`.
    telegram_streaming: Literal["off", "drafts", "edit"] = Field(
        "drafts", validation_alias="TELEGRAM_STREAMING"
    )
    telegram_max_messages_per_second: float = Field(
        30.0, ge=0, validation_alias="TELEGRAM_MAX_MESSAGES_PER_SECOND"
    )

    @field_validator("telegram_api_base_url")
    @classmethod
    def _telegram_base(cls, value: str) -> str:
        if not re.match(r"^https?://[^/\s]+", value):
            raise ValueError("must be an http:// or https:// URL")
        # A bare host (a self-hosted Bot API server) gets PTB's "/bot" path.
        if re.match(r"^https?://[^/]+/?$", value):
            value = value.rstrip("/") + "/bot"
        return value

    @field_validator("telegram_webhook_secret")
    @classmethod
    def _telegram_secret(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not re.match(r"^[A-Za-z0-9_-]{1,256}$", value.get_secret_value()):
            raise ValueError("must be 1-256 characters of A-Z, a-z, 0-9, _ and -")
        return value
