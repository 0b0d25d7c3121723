"""What the rest of the gateway uses of LINE: the channel, doctor's checks, set-webhook.

The registry imports this module only when LINE_CHANNEL_SECRET and
LINE_CHANNEL_ACCESS_TOKEN are set.
"""

from __future__ import annotations

from gateway.channels.base import Channel
from gateway.channels.line.channel import LineChannel
from gateway.channels.line.checks import line_checks
from gateway.channels.line.operator import line_register, line_unregister
from gateway.config import Settings
from gateway.operator import Check, Step


def channel(settings: Settings) -> Channel:
    return LineChannel(settings)


def settings_checks(settings: Settings) -> list[Check]:
    """What the settings alone tell about the channel."""
    return [Check("line", "ok", "channel secret and access token set")]


async def live_checks(settings: Settings) -> list[Check]:
    """The bot's info and the webhook endpoint LINE posts to."""
    return await line_checks(settings)


async def webhook_steps(
    settings: Settings, *, delete: bool, max_connections: int, force: bool
) -> list[Step]:
    """Set the webhook endpoint and test it; LINE cannot remove one, so `delete` says how."""
    if delete:
        return await line_unregister(settings)
    return await line_register(settings, force=force)
