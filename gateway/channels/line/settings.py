"""LINE's settings (`LINE_*`): read with `settings.section(LineSettings)`."""

from __future__ import annotations

from pydantic import Field, SecretStr, field_validator

from gateway.channels.api import Ids, PlatformSettings, http_url


class LineSettings(PlatformSettings):
    """The channel's secret and access token, where the API is, who may chat and review."""

    title = "LINE"
    operator = frozenset({"line_channel_secret", "line_channel_access_token", "line_admin_ids"})

    line_channel_secret: SecretStr | None = Field(None, validation_alias="LINE_CHANNEL_SECRET")
    line_channel_access_token: SecretStr | None = Field(
        None, validation_alias="LINE_CHANNEL_ACCESS_TOKEN"
    )
    line_api_base_url: str = Field("https://api.line.me", validation_alias="LINE_API_BASE_URL")
    line_data_api_base_url: str = Field(
        "https://api-data.line.me", validation_alias="LINE_DATA_API_BASE_URL"
    )
    line_admin_ids: Ids[str] = Field(default_factory=list, validation_alias="LINE_ADMIN_IDS")
    line_allowed_user_ids: Ids[str] = Field(
        default_factory=list, validation_alias="LINE_ALLOWED_USER_IDS"
    )

    _urls = field_validator("line_api_base_url", "line_data_api_base_url")(http_url)
