"""What a platform says about itself, once: `PlatformSpec`, exported by its package's `spec`.

Everything outside a platform's package that needs to know platforms (the admin console
and API, the CLI's choices, the banner, card labels, doctor, log masking, the tests) reads
these through `gateway.channels.registry`. A spec module imports no SDK and nothing heavy:
the CLI reads every spec to build its parser; the channel itself (`entry`) is imported
only when the platform is configured.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, cast

from gateway.channels.interview import Setting
from gateway.core.capabilities import Capabilities

if TYPE_CHECKING:
    from gateway.channels.base import Channel
    from gateway.channels.interview import Setup
    from gateway.config import Settings
    from gateway.operator import Check, Step

NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
"""A platform's name: a path segment of its webhook and the prefix of its deciders."""


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


def id_list(one: str) -> str:
    """A regular expression of comma-separated ids, each matching `one`."""
    return rf"\s*(?:{one})(?:\s*,\s*(?:{one}))*\s*"


def _never(settings: Settings) -> bool:
    return False


def _no_secrets(settings: Settings) -> list[str]:
    return []


@dataclass(frozen=True)
class PlatformSpec:
    """One platform as the rest of the gateway knows it."""

    name: str
    """Its webhook's path segment, the `channel` of what is stored, the prefix of deciders."""
    label: str
    """How people see its name ("Telegram", "LINE")."""
    entry: str
    """The module with the `Entry` functions, imported only when configured."""
    configured: Callable[[Settings], bool]
    needs: str
    """The settings that turn it on, for "no channel configured"."""
    needs_short: str
    """The same in a word or two."""
    settings_prefix: str
    """What its variables start with ("TELEGRAM_")."""
    user_id: str
    """A regular expression one user id of the platform matches."""
    user_id_hint: str
    """The same in words ("a number")."""
    user_label: str
    """How a decider is named on cards, with `{who}`: a text marked `N_` for the catalogs."""
    user_id_shown: int | None = None
    """How much of a user id a card shows (None: all of it)."""
    capabilities: Capabilities = field(default_factory=Capabilities)
    polls: Callable[[Settings], bool] = _never
    """Whether the settings say it receives by polling (no webhook to register)."""
    set_polling: Callable[[Settings, bool], Settings] | None = None
    """The settings with polling on or off; None where it cannot poll."""
    webhook_secret: str | None = None
    """A variable `skillgate doctor --fix` may generate: the platform's settings check (the
    one named after it) fails only while this is unset."""
    secrets: Callable[[Settings], list[str]] = _no_secrets
    """Its configured secret values, masked in logs, beyond those `Settings.secrets` lists."""
    token_shapes: tuple[str, ...] = ()
    """Regular expressions of its credentials, masked in every log line, configured or not."""
    sdk_loggers: tuple[str, ...] = ()
    """Its SDK's loggers that log every request: kept at WARNING, like the HTTP clients'."""
    settings: tuple[Setting, ...] = ()
    """What `skillgate init` asks for (or takes from flags), in the env file's order."""
    setup: str | None = None
    """The module with its `Setup` functions for `skillgate init`: checking the settings
    against the platform, and what else to ask; None: the settings are asked, unchecked."""
    polling_var: str | None = None
    """The variable that makes it poll ("true"), which `skillgate init --polling` sets."""

    def __post_init__(self) -> None:
        if not NAME.match(self.name):
            raise ValueError(f"platform name {self.name!r} is not a-z, 0-9 and _")

    @property
    def route(self) -> str:
        """Its webhook's path: the one `/webhook/{platform}` rule of every proxy config."""
        return f"/webhook/{self.name}"

    def banner(self, settings: Settings) -> str:
        """What `skillgate serve` says about it at start."""
        if self.polls(settings):
            return f"{self.name}: polling; write to your bot"
        where = settings.public_url or "SKILLGATE_PUBLIC_URL (not set)"
        line = f"{self.name}: webhook at {where}{self.route}; `skillgate set-webhook`"
        if self.set_polling is None:
            return f"{line} sets it"
        return f"{line} registers it (once), or poll instead: `skillgate serve --polling`"

    def load(self) -> Entry:
        return cast("Entry", importlib.import_module(self.entry))

    def load_setup(self) -> Setup | None:
        """Its setup module, imported when `skillgate init` gets to it."""
        return None if self.setup is None else cast("Setup", importlib.import_module(self.setup))
