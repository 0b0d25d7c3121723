"""LINE as the rest of the gateway knows it; imports neither line-bot-sdk nor the channel."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.channels.spec import Capabilities, PlatformSpec
from gateway.i18n import N_

if TYPE_CHECKING:
    from gateway.config import Settings


def _configured(settings: Settings) -> bool:
    return settings.line_enabled


SPEC = PlatformSpec(
    name="line",
    label="LINE",
    entry="gateway.channels.line.entry",
    configured=_configured,
    needs="LINE_CHANNEL_SECRET + LINE_CHANNEL_ACCESS_TOKEN",
    needs_short="LINE_CHANNEL_*",
    settings_prefix="LINE_",
    user_id=r"U[0-9a-f]{32}",
    user_id_hint="U and 32 hex digits",
    user_label=N_("LINE user {who}…"),
    user_id_shown=9,
    # No edit API: a decided card gets a notice, a rated answer keeps its buttons.
    capabilities=Capabilities(quick_replies=True),
)
