"""Loopchat's settings (`LOOPCHAT_*`): read with `settings.section(LoopSettings)`."""

from __future__ import annotations

from pydantic import Field, SecretStr, field_validator

from gateway.channels.api import Ids, PlatformSettings, http_url


class LoopSettings(PlatformSettings):
    """Where the platform's API is, the bot's secret, and who may chat and review."""

    title = "Loopchat"
    operator = frozenset({"loopchat_api_url", "loopchat_secret"})

    loopchat_api_url: str | None = Field(None, validation_alias="LOOPCHAT_API_URL")
    loopchat_secret: SecretStr | None = Field(None, validation_alias="LOOPCHAT_SECRET")
    loopchat_admin_ids: Ids[str] = Field(
        default_factory=list, validation_alias="LOOPCHAT_ADMIN_IDS"
    )
    loopchat_allowed_user_ids: Ids[str] = Field(
        default_factory=list, validation_alias="LOOPCHAT_ALLOWED_USER_IDS"
    )

    _url = field_validator("loopchat_api_url")(http_url)
