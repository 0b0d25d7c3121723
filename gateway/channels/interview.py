"""What a platform declares for `skillgate init`: its settings, how to check them, what else to ask.

`gateway/ops/init/` asks every registered platform's `Setting`s (as questions, or takes
them from flags), checks them with the platform's `Setup.check`, then hands over to its
`Setup.interview` for what only the platform knows (how updates arrive, learning an
admin's user id from a message). The questions go through an `Asker`, so a platform's
setup module never imports the terminal library.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from typing import Protocol, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Setting:
    """One variable of a platform, as `skillgate init` asks for it and writes it."""

    var: str
    """The environment variable ("TELEGRAM_BOT_TOKEN")."""
    help: str
    """What it is, for the flag's help ("the Telegram bot token")."""
    ask: str = ""
    """The interview's question; empty: not asked (a flag, the environment, or the
    platform's `interview` sets it)."""
    flag: str = ""
    """The `skillgate init --non-interactive` flag ("--telegram-token"); empty: the
    environment alone (an API base URL pointed at a test server)."""
    secret: bool = False
    """Typed without echo, never printed; a refused one is not offered again."""
    required: bool = False
    """The platform needs it: any one given turns the platform on, and then all are needed."""
    pattern: str = ""
    """A regular expression a valid value matches (empty: anything)."""
    hint: str = ""
    """The pattern in words, said when a flag's value does not match."""
    default: str = ""
    """The value the gateway assumes: not written to the env file."""

    def valid(self, value: str) -> bool:
        return not self.pattern or re.fullmatch(self.pattern, value.strip()) is not None


@dataclass(frozen=True)
class Found:
    """What the platform says about the bot the settings belong to."""

    shown: str
    """After the check's ✓ ("@skillgate_bot (Skill Bot)")."""
    name: str
    """In the env file's comment and init's summary ("@skillgate_bot")."""
    handle: str = ""
    """How people find the bot on the platform (a username, a basic id)."""
    link: str = ""
    """Where to write to the bot, said as the next step when nothing else is needed."""


class Asker(Protocol):
    """The interview's questions, as a platform's `Setup.interview` asks them."""

    listen_host: str
    listen_port: int
    """Where `skillgate serve` will listen: the proxy forwards SKILLGATE_PUBLIC_URL there."""
    wait_seconds: float
    """How long to wait for an admin's message."""

    def say(self, text: str) -> None: ...

    async def select(
        self, message: str, choices: list[tuple[str, T]], default: T | None = None
    ) -> T: ...

    async def text(self, message: str, default: str = "", pattern: str = "") -> str: ...

    async def yes(self, message: str, default: bool = True) -> bool: ...

    async def public_url(self) -> str:
        """SKILLGATE_PUBLIC_URL, asked once if it is not known yet."""
        ...


class Setup(Protocol):
    """The functions of a platform's setup module (`PlatformSpec.setup` names it)."""

    async def check(self, values: Mapping[str, str]) -> Found:
        """Try the settings against the platform; ChannelError saying why it refuses them."""
        ...

    async def interview(self, ask: Asker, values: MutableMapping[str, str], bot: Found) -> None:
        """Ask what only the platform knows, setting its variables in `values`."""
        ...
