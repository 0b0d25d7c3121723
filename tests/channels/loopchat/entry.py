"""What the gateway uses of Loopchat, imported only when it is configured."""

from __future__ import annotations

from gateway.channels.api import Channel, Check, Settings, Step
from tests.channels.loopchat.channel import LoopChannel
from tests.channels.loopchat.settings import LoopSettings


def channel(settings: Settings) -> Channel:
    return LoopChannel(settings.section(LoopSettings))


def settings_checks(settings: Settings) -> list[Check]:
    return [Check("loopchat", "ok", "API URL and secret set")]


async def live_checks(settings: Settings) -> list[Check]:
    return []


async def webhook_steps(
    settings: Settings, *, delete: bool, max_connections: int, force: bool
) -> list[Step]:
    return []  # Loopchat's webhook address is set on its side
