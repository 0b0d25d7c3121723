"""Loopchat as the gateway knows it: the one object its entry point names."""

from __future__ import annotations

from gateway.channels.api import Capabilities, PlatformSpec, Setting, id_list
from tests.channels.loopchat.settings import LoopSettings

USER_ID = r"u[0-9]+"

SETTINGS = (
    Setting(
        "LOOPCHAT_API_URL",
        "the Loopchat API's address",
        ask="Loopchat API address (http://...):",
        flag="--loopchat-api-url",
        required=True,
        pattern=r"https?://\S+",
        hint="an http(s) address",
    ),
    Setting(
        "LOOPCHAT_SECRET",
        "the Loopchat bot's secret",
        ask="Loopchat bot secret:",
        flag="--loopchat-secret",
        secret=True,
        required=True,
    ),
    Setting(
        "LOOPCHAT_ADMIN_IDS",
        "comma-separated Loopchat user ids",
        ask="Loopchat admin ids (u and digits, comma-separated):",
        flag="--loopchat-admin-ids",
        pattern=id_list(USER_ID),
        hint="comma-separated Loopchat user ids (u and digits)",
    ),
)

SPEC = PlatformSpec(
    name="loopchat",
    label="Loopchat",
    entry="tests.channels.loopchat.entry",
    section=LoopSettings,
    user_id=USER_ID,
    user_id_hint="u and digits",
    user_label="Loopchat user {who}",
    settings=SETTINGS,
    # Edits, unlike LINE; no drafts, unlike Telegram: the answer arrives whole.
    capabilities=Capabilities(edit=True),
    token_shapes=(r"loop-token-[0-9a-f]{16}",),
    setup="tests.channels.loopchat.setup",
)
