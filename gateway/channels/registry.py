"""Every platform the gateway can serve, in one place; each is imported only when configured.

Importing line-bot-sdk's messaging module alone costs about 2 s, so a platform's
channel is loaded (through its `entry` module) only when its settings are set; what
the rest of the gateway needs to know about it is its `PlatformSpec`, which is cheap.
The built-in platforms are listed here; a platform from another distribution registers
its spec under the `skillgate.platforms` entry-point group (see docs/ADDING_A_CHANNEL.md):

    [project.entry-points."skillgate.platforms"]
    discord = "skillgate_discord.spec:SPEC"
"""

from __future__ import annotations

import functools
import importlib
import logging
import sys
from importlib.metadata import entry_points
from typing import TYPE_CHECKING

from gateway.channels.spec import PlatformSpec
from gateway.core.capabilities import Capabilities

if TYPE_CHECKING:
    from gateway.channels.base import Channel
    from gateway.config import Settings
    from gateway.core.push_quota import PushQuota

log = logging.getLogger(__name__)

GROUP = "skillgate.platforms"
"""The entry-point group a platform package registers its `PlatformSpec` under."""
BUILT_IN = ("gateway.channels.telegram.spec", "gateway.channels.line.spec")


def _built_in() -> list[PlatformSpec]:
    return [importlib.import_module(module).SPEC for module in BUILT_IN]


def _registered(taken: set[str]) -> list[PlatformSpec]:
    """The specs installed packages register; one that cannot be loaded is left out, logged."""
    found = []
    for point in sorted(entry_points(group=GROUP), key=lambda p: p.name):
        try:
            spec = point.load()
        except Exception:
            log.exception("platform %s (%s) could not be loaded", point.name, point.value)
            continue
        if not isinstance(spec, PlatformSpec) or spec.name != point.name:
            log.error(
                "platform %s (%s) is not a PlatformSpec of that name", point.name, point.value
            )
        elif spec.name in taken:
            log.error("platform %s (%s) is registered twice", point.name, point.value)
        else:
            taken.add(spec.name)
            found.append(spec)
    return found


def platforms() -> list[PlatformSpec]:
    """Every platform: the built-in ones, then those installed packages register."""
    return list(_discovered(tuple(sys.path)))


@functools.cache
def _discovered(path: tuple[str, ...]) -> tuple[PlatformSpec, ...]:
    """The platforms importable from `path` (sys.path), looked up once per path.

    Scanning the installed distributions takes milliseconds, and the console, the CLI and
    the app ask often; a package installed while the process runs counts after a restart,
    as with any plugin.
    """
    built_in = _built_in()
    return (*built_in, *_registered({p.name for p in built_in}))


def platform(name: str) -> PlatformSpec | None:
    """The platform of that name, or None."""
    return next((p for p in platforms() if p.name == name), None)


def by_name() -> dict[str, PlatformSpec]:
    """Every platform by name: how cards name each platform's users, for instance."""
    return {p.name: p for p in platforms()}


def capabilities() -> dict[str, Capabilities]:
    """What each platform can do, by name: what the card delivery decides by."""
    return {p.name: p.capabilities for p in platforms()}


def configured_platforms(settings: Settings) -> list[PlatformSpec]:
    """The platforms whose settings are set."""
    return [p for p in platforms() if p.configured(settings)]


def configured_channels(settings: Settings) -> list[Channel]:
    """Adapters for the channels whose credentials are set."""
    return [p.load().channel(settings) for p in configured_platforms(settings)]


def polling(settings: Settings, *, on: bool) -> Settings:
    """The settings with polling on (or off) for every platform that can poll."""
    for p in platforms():
        settings = p.set_polling(settings, on)
    return settings


def secrets(settings: Settings) -> list[str]:
    """Every configured secret value: the gateway's and each platform's own, for masking."""
    return [*settings.gateway_secrets(), *(s for p in platforms() for s in p.secrets(settings))]


def checked(settings: Settings) -> Settings:
    """`settings`, every platform's section read: a bad value of a platform's variable is a
    ConfigError now, naming it, as a bad value of the gateway's own is."""
    for p in platforms():
        p.read(settings)
    return settings


def token_shapes() -> list[str]:
    """Every platform's credential shapes, for log masking."""
    return [shape for p in platforms() for shape in p.token_shapes]


def sdk_loggers() -> list[str]:
    """Every platform's chatty SDK loggers."""
    return [name for p in platforms() for name in p.sdk_loggers]


async def push_quota(settings: Settings, channel: str) -> PushQuota | None:
    """The channel's monthly push quota, where its platform has one, is configured and the
    quota can be read (for tasks made outside a chat: the CLI, the console)."""
    from gateway.core.push_quota import CachedQuota

    spec = platform(channel)
    if spec is None or not spec.configured(settings):
        return None
    read = spec.load().channel(settings).profile.push_quota
    return None if read is None else await CachedQuota(read).get()
