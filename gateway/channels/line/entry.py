"""What the rest of the gateway uses of LINE: the channel, doctor's checks, set-webhook.

The registry imports this module only when LINE_CHANNEL_SECRET and
LINE_CHANNEL_ACCESS_TOKEN are set. Importing it does not import line-bot-sdk: the channel
speaks the Messaging API's JSON and loads the SDK's Flex models for its first card
(`admin_cards`), the checks and webhook steps when called.
"""

from __future__ import annotations

from gateway.channels.api import Channel, Check, Settings, Step
from gateway.channels.line.channel import LineChannel


def channel(settings: Settings) -> Channel:
    return LineChannel(settings, load_in_background=True)


def settings_checks(settings: Settings) -> list[Check]:
    """What the settings alone tell about the channel."""
    return [Check("line", "ok", "channel secret and access token set")]


async def live_checks(settings: Settings) -> list[Check]:
    """The bot's info and the webhook endpoint LINE posts to."""
    from gateway.channels.line.checks import line_checks

    return await line_checks(settings)


async def webhook_steps(
    settings: Settings, *, delete: bool, max_connections: int, force: bool
) -> list[Step]:
    """Set the webhook endpoint and test it; LINE cannot remove one, so `delete` says how."""
    from gateway.channels.line.operator import line_register, line_unregister

    if delete:
        return await line_unregister(settings)
    return await line_register(settings, force=force)
