"""Every platform the gateway can serve, in one place; each is imported only when configured.

Importing line-bot-sdk's messaging module alone costs about 2 s, so a platform's
package is loaded (through its `entry` module) only when its settings are set.
A new platform is one line in `PLATFORMS` and a package with an `entry` module
(see docs/ADDING_A_CHANNEL.md).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, cast

if TYPE_CHECKING:
    from gateway.channels.base import Channel
    from gateway.config import Settings
    from gateway.operator import Check, Step


class Entry(Protocol):
    """The functions a platform's `entry` module offers."""

    def channel(self, settings: Settings) -> Channel:
        """The channel adapter for the server."""
        ...

    def settings_checks(self, settings: Settings) -> list[Check]:
        """`skillgate doctor`: what the settings alone say."""
        ...

    async def live_checks(self, settings: Settings) -> list[Check]:
        """`skillgate doctor`: what the platform says about the bot and its webhook."""
        ...

    async def webhook_steps(
        self, settings: Settings, *, delete: bool, max_connections: int, force: bool
    ) -> list[Step]:
        """`skillgate set-webhook`: register the webhook (or remove it)."""
        ...


@dataclass(frozen=True)
class Platform:
    """A platform: its name, when it is configured, and where its entry module is."""

    name: str
    configured: Callable[[Settings], bool]
    entry: str
    needs: str
    """The settings that turn it on, for "no channel configured"."""
    needs_short: str
    """The same in a word or two."""

    def load(self) -> Entry:
        return cast("Entry", importlib.import_module(self.entry))


PLATFORMS = (
    Platform(
        "telegram",
        lambda s: s.telegram_enabled,
        "gateway.channels.telegram.entry",
        "TELEGRAM_BOT_TOKEN",
        "TELEGRAM_BOT_TOKEN",
    ),
    Platform(
        "line",
        lambda s: s.line_enabled,
        "gateway.channels.line.entry",
        "LINE_CHANNEL_SECRET + LINE_CHANNEL_ACCESS_TOKEN",
        "LINE_CHANNEL_*",
    ),
)


def configured_platforms(settings: Settings) -> list[Platform]:
    """The platforms whose settings are set."""
    return [p for p in PLATFORMS if p.configured(settings)]


def configured_channels(settings: Settings) -> list[Channel]:
    """Adapters for the channels whose credentials are set."""
    return [p.load().channel(settings) for p in configured_platforms(settings)]
