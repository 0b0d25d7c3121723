"""LINE as the rest of the gateway knows it; imports neither line-bot-sdk nor the channel."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.channels.interview import Setting
from gateway.channels.spec import PlatformSpec, id_list
from gateway.core.capabilities import Capabilities
from gateway.i18n import N_

if TYPE_CHECKING:
    from gateway.config import Settings


def _configured(settings: Settings) -> bool:
    return (
        settings.line_channel_secret is not None and settings.line_channel_access_token is not None
    )


USER_ID = r"U[0-9a-f]{32}"

SETTINGS = (
    Setting(
        "LINE_CHANNEL_SECRET",
        "the LINE channel secret",
        ask="LINE channel secret (LINE Developers console, your channel, Basic settings):",
        flag="--line-channel-secret",
        secret=True,
        required=True,
    ),
    Setting(
        "LINE_CHANNEL_ACCESS_TOKEN",
        "the LINE channel access token",
        ask="LINE channel access token (Messaging API tab, a long-lived one):",
        flag="--line-access-token",
        secret=True,
        required=True,
    ),
    Setting(
        "LINE_ADMIN_IDS",
        "comma-separated LINE user ids",
        flag="--line-admin-ids",
        pattern=id_list(USER_ID),
        hint="comma-separated LINE user ids (U and 32 hex digits)",
    ),
    Setting("LINE_API_BASE_URL", "the Messaging API's base URL", default="https://api.line.me"),
)

SPEC = PlatformSpec(
    name="line",
    label="LINE",
    entry="gateway.channels.line.entry",
    configured=_configured,
    needs="LINE_CHANNEL_SECRET + LINE_CHANNEL_ACCESS_TOKEN",
    needs_short="LINE_CHANNEL_*",
    settings_prefix="LINE_",
    user_id=USER_ID,
    user_id_hint="U and 32 hex digits",
    user_label=N_("LINE user {who}…"),
    user_id_shown=9,
    # No edit API: a decided card gets a notice, a rated answer keeps its buttons.
    capabilities=Capabilities(),
    settings=SETTINGS,
    setup="gateway.channels.line.interview",
)
