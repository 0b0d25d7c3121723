"""Which channels run: each SDK is imported only when its channel is configured."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.channels.base import Channel
    from gateway.config import Settings


def configured_channels(settings: Settings) -> list[Channel]:
    """Adapters for the channels whose credentials are set."""
    channels: list[Channel] = []
    if settings.telegram_enabled:
        from gateway.channels.telegram.channel import TelegramChannel

        channels.append(TelegramChannel(settings))
    if settings.line_enabled:
        from gateway.channels.line.channel import LineChannel

        channels.append(LineChannel(settings))
    return channels
