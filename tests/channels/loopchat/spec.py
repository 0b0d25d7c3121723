"""Loopchat as the gateway knows it: the one object its entry point names."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.channels.spec import Capabilities, PlatformSpec
from tests.channels.loopchat.settings import LoopSettings

if TYPE_CHECKING:
    from gateway.config import Settings


def _configured(settings: Settings) -> bool:
    return LoopSettings().configured


def _secrets(settings: Settings) -> list[str]:
    secret = LoopSettings().secret
    return [] if secret is None else [secret.get_secret_value()]


SPEC = PlatformSpec(
    name="loopchat",
    label="Loopchat",
    entry="tests.channels.loopchat.entry",
    configured=_configured,
    needs="LOOPCHAT_API_URL + LOOPCHAT_SECRET",
    needs_short="LOOPCHAT_*",
    settings_prefix="LOOPCHAT_",
    user_id=r"u[0-9]+",
    user_id_hint="u and digits",
    user_label="Loopchat user {who}",
    capabilities=Capabilities(),
    secrets=_secrets,
    token_shapes=(r"loop-token-[0-9a-f]{16}",),
)
