"""Loopchat's own settings (`LOOPCHAT_*`), from the environment and `.env` like the gateway's."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict


class LoopSettings(BaseSettings):
    """Where the platform's API is, the webhook secret, and who may chat and review."""

    model_config = SettingsConfigDict(env_file=".env", extra="ignore", case_sensitive=True)

    api_url: str | None = Field(None, validation_alias="LOOPCHAT_API_URL")
    secret: SecretStr | None = Field(None, validation_alias="LOOPCHAT_SECRET")
    admin_ids: Annotated[list[str], NoDecode] = Field(
        default_factory=list, validation_alias="LOOPCHAT_ADMIN_IDS"
    )
    allowed_user_ids: Annotated[list[str], NoDecode] = Field(
        default_factory=list, validation_alias="LOOPCHAT_ALLOWED_USER_IDS"
    )

    @field_validator("admin_ids", "allowed_user_ids", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @property
    def configured(self) -> bool:
        return self.api_url is not None and self.secret is not None
