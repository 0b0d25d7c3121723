"""What a platform says about itself, once: `PlatformSpec`, exported by its package's `spec`.

Everything outside a platform's package that needs to know platforms (the admin console
and API, the CLI's choices, the banner, card labels, doctor, log masking, the tests) reads
these through `gateway.channels.registry`. A spec module imports no SDK and nothing heavy:
the CLI reads every spec to build its parser; the channel itself (`entry`) is imported
only when the platform is configured.

A platform's settings are a `PlatformSettings` class in its own package, read with
`settings.section(ItsSettings)`; its spec names that class, and what can be read from it
(whether the platform is configured or polls, its secrets, its variables' prefix) is
derived, not said again.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field
from functools import cached_property
from itertools import takewhile
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Protocol, TypeVar, cast, get_args

from pydantic import BeforeValidator, SecretStr, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, NoDecode

from gateway.channels.interview import Setting
from gateway.config import SETTINGS_CONFIG, Settings
from gateway.core.capabilities import Capabilities

if TYPE_CHECKING:
    from gateway.channels.base import Channel
    from gateway.channels.interview import Setup
    from gateway.operator import Check, Step

NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
"""A platform's name: a path segment of its webhook and the prefix of its deciders."""


def _split_ids(value: Any) -> Any:
    """Accept "1, 2,3" (the documented form) as well as a list."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


T = TypeVar("T")
Ids = Annotated[list[T], NoDecode, BeforeValidator(_split_ids)]
"""A list of user ids, written "1, 2,3" in a variable: `Ids[int]`, `Ids[str]`."""


def http_url(value: str | None) -> str | None:
    """An http(s) URL without its trailing `/` (a field validator: `field_validator(...)`)."""
    if value is None:
        return None
    if not re.match(r"^https?://[^/\s]+", value):
        raise ValueError("must be an http:// or https:// URL")
    return value.rstrip("/")


class PlatformSettings(BaseSettings):
    """A platform's section of the settings: its own variables, read like the gateway's.

    A subclass declares its fields as `Settings` does (`platform_thing: type =
    Field(default, validation_alias="PLATFORM_THING")`: every field named after its
    variable, which starts with the platform's name, upper-case, and `_`), and is read
    with `settings.section(TheClass)`: from the environment, the same env file and the
    keyword values the settings were made with, once per `Settings`. An empty value
    (`FOO=`) of a field that may be None is None.
    Every SecretStr field is a secret: masked in the logs, never echoed in an error.
    """

    model_config = SETTINGS_CONFIG

    title: ClassVar[str] = ""
    """Its heading in docs/SETTINGS.md and .env.example: the platform's label."""
    operator: ClassVar[frozenset[str]] = frozenset()
    """Its fields an operator sets (the first table of docs/SETTINGS.md): the bot's
    credentials and its admins; the others are listed under `title` with their defaults."""
    polling_field: ClassVar[str | None] = None
    """The bool field that makes the platform poll instead of taking webhooks, if it can."""
    webhook_secret_field: ClassVar[str | None] = None
    """The field with the secret its webhook is checked by, which `skillgate doctor --fix`
    (and `skillgate init`) may generate when it is unset."""

    @field_validator("*", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: Any, info: ValidationInfo) -> Any:
        # `FOO=` in .env means "not set", as operators expect from .env.example.
        annotation = cls.model_fields[str(info.field_name)].annotation
        if isinstance(value, str) and not value.strip() and type(None) in get_args(annotation):
            return None
        return value

    def polls(self) -> bool:
        """Whether it receives by polling (no webhook to register)."""
        return self.polling_field is not None and bool(getattr(self, self.polling_field))

    def secrets(self) -> list[str]:
        """Its configured secret values: every SecretStr field that is set."""
        return [v.get_secret_value() for _, v in self if isinstance(v, SecretStr)]

    @classmethod
    def variable(cls, field_name: str) -> str:
        """The environment variable of a field."""
        return str(cls.model_fields[field_name].validation_alias)


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


@dataclass(frozen=True)
class PlatformSpec:
    """One platform as the rest of the gateway knows it: what it must say; the rest is
    derived (from its settings class and its `settings`)."""

    name: str
    """Its webhook's path segment, the `channel` of what is stored, the prefix of deciders;
    its variables start with it, upper-case, and `_` ("TELEGRAM_")."""
    label: str
    """How people see its name ("Telegram", "LINE")."""
    entry: str
    """The module with the `Entry` functions, imported only when configured."""
    section: type[PlatformSettings]
    """Its settings class, read with `settings.section`."""
    user_id: str
    """A regular expression one user id of the platform matches."""
    user_id_hint: str
    """The same in words ("a number")."""
    user_label: str
    """How a decider is named on cards, with `{who}`: a text marked `N_` for the catalogs."""
    settings: tuple[Setting, ...]
    """What `skillgate init` asks for (or takes from flags), in the env file's order; the
    `required` ones turn the platform on: it is configured when all of them are set."""
    user_id_shown: int | None = None
    """How much of a user id a card shows (None: all of it)."""
    capabilities: Capabilities = field(default_factory=Capabilities)
    token_shapes: tuple[str, ...] = ()
    """Regular expressions of its credentials, masked in every log line, configured or not."""
    sdk_loggers: tuple[str, ...] = ()
    """Its SDK's loggers that log every request: kept at WARNING, like the HTTP clients'."""
    setup: str | None = None
    """The module with its `Setup` functions for `skillgate init`: checking the settings
    against the platform, and what else to ask; None: the settings are asked, unchecked."""

    def __post_init__(self) -> None:
        if not NAME.match(self.name):
            raise ValueError(f"platform name {self.name!r} is not a-z, 0-9 and _")
        fields = self.section.model_fields
        variables = [self.section.variable(f) for f in fields]
        stray = [
            v
            for f, v in zip(fields, variables, strict=True)
            if not v.startswith(self.settings_prefix) or f != v.lower()
        ]
        if stray:
            raise ValueError(
                f"platform {self.name}: {stray} do not start {self.settings_prefix} or are"
                " not the names of their fields, upper-case"
            )
        unknown = [s.var for s in self.settings if s.var not in variables]
        if unknown:
            raise ValueError(f"platform {self.name}: {unknown} are no fields of its section")
        if not self.required:
            raise ValueError(f"platform {self.name}: no setting is required to turn it on")

    @property
    def settings_prefix(self) -> str:
        """What its variables start with ("TELEGRAM_")."""
        return f"{self.name.upper()}_"

    @cached_property
    def required(self) -> tuple[str, ...]:
        """The fields that turn it on (the `required` settings), by name."""
        by_variable = {self.section.variable(f): f for f in self.section.model_fields}
        return tuple(by_variable[s.var] for s in self.settings if s.required)

    @property
    def needs(self) -> str:
        """The settings that turn it on, for "no channel configured"."""
        return " + ".join(self.section.variable(f) for f in self.required)

    @property
    def needs_short(self) -> str:
        """The same in a word or two ("LINE_CHANNEL_*")."""
        variables = [self.section.variable(f) for f in self.required]
        if len(variables) == 1:
            return variables[0]
        words = [v.split("_") for v in variables]
        shared = [w[0] for w in takewhile(lambda w: len(set(w)) == 1, zip(*words, strict=False))]
        return "_".join(shared) + "_*"

    @property
    def polling_var(self) -> str | None:
        """The variable that makes it poll ("true"), which `skillgate init --polling` sets."""
        polling = self.section.polling_field
        return None if polling is None else self.section.variable(polling)

    @property
    def webhook_secret(self) -> str | None:
        """A variable `skillgate doctor --fix` may generate: the platform's settings check (the
        one named after it) fails only while this is unset."""
        secret = self.section.webhook_secret_field
        return None if secret is None else self.section.variable(secret)

    @property
    def can_poll(self) -> bool:
        return self.section.polling_field is not None

    def read(self, settings: Settings) -> PlatformSettings:
        """Its section of `settings`."""
        return settings.section(self.section)

    def configured(self, settings: Settings) -> bool:
        """Whether its settings are set: every required one."""
        section = self.read(settings)
        return all(getattr(section, f) is not None for f in self.required)

    def polls(self, settings: Settings) -> bool:
        """Whether the settings say it receives by polling (no webhook to register)."""
        return self.read(settings).polls()

    def set_polling(self, settings: Settings, on: bool) -> Settings:
        """The settings with polling on or off; unchanged where it cannot poll."""
        polling = self.section.polling_field
        return settings if polling is None else settings.model_copy(update={polling: on})

    def secrets(self, settings: Settings) -> list[str]:
        """Its configured secret values, masked in logs, beside the gateway's own."""
        return self.read(settings).secrets()

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
        if not self.can_poll:
            return f"{line} sets it"
        return f"{line} registers it (once), or poll instead: `skillgate serve --polling`"

    def load(self) -> Entry:
        return cast("Entry", importlib.import_module(self.entry))

    def load_setup(self) -> Setup | None:
        """Its setup module, imported when `skillgate init` gets to it."""
        return None if self.setup is None else cast("Setup", importlib.import_module(self.setup))
