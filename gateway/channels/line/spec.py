"""LINE as the rest of the gateway knows it; imports neither line-bot-sdk nor the channel."""

from __future__ import annotations

from gateway.channels.api import N_, Capabilities, PlatformSpec, Setting, id_list
from gateway.channels.line.settings import LineSettings

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
    section=LineSettings,
    user_id=USER_ID,
    user_id_hint="U and 32 hex digits",
    user_label=N_("LINE user {who}…"),
    user_id_shown=9,
    # No edit API: a decided card gets a notice, a rated answer keeps its buttons.
    capabilities=Capabilities(speech="mp3", media_by_link=True),
    settings=SETTINGS,
    setup="gateway.channels.line.interview",
)
