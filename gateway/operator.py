"""What an operator command did or found, one line each (doctor checks, set-webhook steps)."""

from __future__ import annotations

from dataclasses import dataclass

from gateway.config import Settings
from gateway.errors import ConfigError
from gateway.shell import as_typed_here

SET_WEBHOOK = "run `skillgate set-webhook`"
SET_PUBLIC_URL = (
    "set SKILLGATE_PUBLIC_URL=https://<your domain> in the env file (`skillgate init` asks"
    " for it), then run `skillgate set-webhook`"
)


@dataclass
class Check:
    """One thing `skillgate doctor` checked, and what to do about it."""

    name: str
    status: str  # ok | warn | fail
    detail: str
    fix: str = ""

    def lines(self) -> list[str]:
        """How doctor prints it: the status and the finding, then the fix unless it is ok."""
        first = as_typed_here(f"{self.status.upper():4} {self.name}: {self.detail}")
        if self.fix and self.status != "ok":
            return [first, f"     fix: {as_typed_here(self.fix)}"]
        return [first]


@dataclass
class Step:
    """One thing set-webhook did or found."""

    name: str
    status: str  # set | unchanged | deleted | absent | ok | warn | fail
    detail: str

    def line(self) -> str:
        return f"{self.name}: {self.status} {self.detail}".rstrip()


def public_endpoint(settings: Settings, path: str) -> str:
    """SKILLGATE_PUBLIC_URL + path; the platforms post to HTTPS only."""
    base = settings.public_url
    if base is None:
        raise ConfigError(
            "SKILLGATE_PUBLIC_URL is not set: set it to the https:// address of your server"
        )
    if not base.startswith("https://"):
        raise ConfigError(
            "SKILLGATE_PUBLIC_URL must start with https:// (the platforms post to https only)"
        )
    return base + path
