"""What `skillgate init` learned, and the short commented env file it becomes."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime

from gateway import __version__
from gateway.channels.interview import Found
from gateway.channels.registry import platforms
from gateway.channels.spec import PlatformSpec
from gateway.ops.init.envfile import quote

BASE = (
    "SKILLGATE_DATA_DIR",
    "SKILLGATE_PUBLIC_URL",
    "SKILLGATE_ADMIN_TOKEN",
    "LLM_BASE_URL",
    "LLM_API_KEY",
    "LLM_MODEL",
    "LLM_LOCAL_MODEL",
)


def interviewed() -> list[PlatformSpec]:
    """The platforms `skillgate init` asks about: each that declares its settings."""
    return [p for p in platforms() if p.settings]


def managed() -> frozenset[str]:
    """The settings init asks about; any other line of a replaced env file is carried over."""
    return frozenset(BASE).union(*(PlatformAnswers(p).variables() for p in interviewed()))


def new_secret() -> str:
    """A random token for SKILLGATE_ADMIN_TOKEN or a webhook secret (URL-safe)."""
    return secrets.token_urlsafe(32)


@dataclass
class PlatformAnswers:
    """One platform's settings as init learned them, and what the platform said of the bot."""

    spec: PlatformSpec
    values: dict[str, str] = field(default_factory=dict)
    found: Found | None = None

    def variables(self) -> list[str]:
        """Every variable of the platform init writes, in the env file's order."""
        extra = (self.spec.polling_var, self.spec.webhook_secret)
        return [s.var for s in self.spec.settings] + [v for v in extra if v is not None]

    @property
    def polling(self) -> bool:
        var = self.spec.polling_var
        return var is not None and self.values.get(var, "").lower() in ("true", "1", "yes")

    @property
    def webhook(self) -> bool:
        return not self.polling

    def missing(self) -> list[str]:
        """The required settings not given."""
        return [s.var for s in self.spec.settings if s.required and not self.values.get(s.var)]

    def lines(self) -> list[tuple[str, str]]:
        """(KEY, value) of what is set and not the default."""
        defaults = {s.var: s.default for s in self.spec.settings}
        out = [(v, self.values.get(v, "")) for v in self.variables()]
        if self.spec.webhook_secret is not None and self.polling:
            out = [(k, v) for k, v in out if k != self.spec.webhook_secret]
        return [(k, v) for k, v in out if v and v != defaults.get(k)]

    def comment(self) -> str:
        bot = self.found.name if self.found is not None else "the bot"
        how = f"updates by webhook at SKILLGATE_PUBLIC_URL{self.spec.route}"
        if self.polling:
            how = "updates by polling (no public address needed)"
        elif self.spec.can_poll:
            how += "; run `skillgate set-webhook` once"
        return f"{self.spec.label}: {bot}, {how}. Admins review skill proposals."


@dataclass
class Answers:
    """The settings init writes; empty strings and lists are left out of the file."""

    llm_base_url: str = ""
    llm_model: str = ""
    llm_api_key: str = ""
    llm_local_model: str = ""
    public_url: str = ""
    data_dir: str = ""
    admin_token: str = field(default_factory=new_secret)
    kept: dict[str, str] = field(default_factory=dict)
    platforms: list[PlatformAnswers] = field(default_factory=list)

    @property
    def webhook(self) -> bool:
        """Something arrives by webhook: a platform that does not poll."""
        return any(p.webhook for p in self.platforms)

    def sections(self) -> list[tuple[str, list[tuple[str, str]]]]:
        """(comment, [(KEY, value), ...]) blocks, in the order they are written."""
        blocks: list[tuple[str, list[tuple[str, str]]]] = []
        gateway = [("SKILLGATE_DATA_DIR", self.data_dir), ("SKILLGATE_PUBLIC_URL", self.public_url)]
        where = "The data dir (database, persona.md, skills)" if self.data_dir else ""
        if self.public_url:
            where += "; " if where else ""
            where += "the https address the platforms post to (your reverse proxy)"
        blocks.append((where[:1].upper() + where[1:] + ".", gateway))
        if self.llm_local_model:
            blocks.append(
                (
                    "The model: a tiny one on this machine, for trying (llama.cpp's server,"
                    " started by serve and chat). For users: LLM_BASE_URL and LLM_MODEL instead.",
                    [("LLM_LOCAL_MODEL", self.llm_local_model)],
                )
            )
        else:
            blocks.append(
                (
                    "The model: an OpenAI-compatible endpoint (its base URL ends in /v1).",
                    [
                        ("LLM_BASE_URL", self.llm_base_url),
                        ("LLM_MODEL", self.llm_model),
                        ("LLM_API_KEY", self.llm_api_key),
                    ],
                )
            )
        blocks += [(p.comment(), p.lines()) for p in self.platforms]
        blocks.append(
            (
                "The admin console (/admin/) and its API: sign in with this token.",
                [("SKILLGATE_ADMIN_TOKEN", self.admin_token)],
            )
        )
        if self.kept:
            blocks.append(("Kept from the previous file.", sorted(self.kept.items())))
        return [(c, [(k, v) for k, v in lines if v]) for c, lines in blocks]

    def render(self) -> str:
        """The env file's text: a header, then one commented block per part."""
        day = datetime.now(UTC).date().isoformat()
        out = [
            f"# Skillgate settings, written by `skillgate init` ({__version__}, {day}).",
            "# Private (mode 600): it holds secrets. Every other setting: docs/SETTINGS.md.",
            "# The environment overrides this file.",
        ]
        for comment, lines in self.sections():
            if not lines:
                continue
            out += ["", f"# {comment}", *(f"{k}={quote(v)}" for k, v in lines)]
        return "\n".join(out) + "\n"
