"""What `skillgate init` learned, and the short commented env file it becomes."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime

from gateway import __version__
from gateway.config import Settings
from gateway.ops.init.envfile import quote

DEFAULT_TELEGRAM_API = str(Settings.model_fields["telegram_api_base_url"].default)
DEFAULT_LINE_API = str(Settings.model_fields["line_api_base_url"].default)

MANAGED = frozenset(
    {
        "SKILLGATE_DATA_DIR",
        "SKILLGATE_PUBLIC_URL",
        "SKILLGATE_ADMIN_TOKEN",
        "LLM_BASE_URL",
        "LLM_API_KEY",
        "LLM_MODEL",
        "LLM_LOCAL_MODEL",
        "TELEGRAM_BOT_TOKEN",
        "TELEGRAM_WEBHOOK_SECRET",
        "TELEGRAM_API_BASE_URL",
        "TELEGRAM_ADMIN_IDS",
        "TELEGRAM_POLLING",
        "LINE_CHANNEL_SECRET",
        "LINE_CHANNEL_ACCESS_TOKEN",
        "LINE_API_BASE_URL",
        "LINE_ADMIN_IDS",
    }
)
"""The settings init asks about; any other line of a replaced env file is carried over."""


def new_secret() -> str:
    """A random token for SKILLGATE_ADMIN_TOKEN or TELEGRAM_WEBHOOK_SECRET (URL-safe)."""
    return secrets.token_urlsafe(32)


@dataclass
class Answers:
    """The settings init writes; empty strings and lists are left out of the file."""

    llm_base_url: str = ""
    llm_model: str = ""
    llm_api_key: str = ""
    llm_local_model: str = ""
    telegram_token: str = ""
    telegram_bot: str = ""
    telegram_polling: bool = True
    telegram_webhook_secret: str = ""
    telegram_admin_ids: list[int] = field(default_factory=list)
    telegram_api_base_url: str = DEFAULT_TELEGRAM_API
    line_secret: str = ""
    line_token: str = ""
    line_bot: str = ""
    line_admin_ids: list[str] = field(default_factory=list)
    line_api_base_url: str = DEFAULT_LINE_API
    public_url: str = ""
    data_dir: str = ""
    admin_token: str = field(default_factory=new_secret)
    kept: dict[str, str] = field(default_factory=dict)

    @property
    def webhook(self) -> bool:
        """Something arrives by webhook: LINE always, Telegram unless it polls."""
        return bool(self.line_token) or (bool(self.telegram_token) and not self.telegram_polling)

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
        if self.telegram_token:
            how = "updates by polling (no public address needed)"
            if not self.telegram_polling:
                how = "updates by webhook; run `skillgate set-webhook` once"
            bot = f"@{self.telegram_bot}" if self.telegram_bot else "the bot"
            api = (
                ""
                if self.telegram_api_base_url == DEFAULT_TELEGRAM_API
                else self.telegram_api_base_url
            )
            blocks.append(
                (
                    f"Telegram: {bot}, {how}. Admins review skill proposals.",
                    [
                        ("TELEGRAM_BOT_TOKEN", self.telegram_token),
                        ("TELEGRAM_POLLING", "true" if self.telegram_polling else ""),
                        ("TELEGRAM_WEBHOOK_SECRET", self.telegram_webhook_secret),
                        ("TELEGRAM_ADMIN_IDS", ",".join(map(str, self.telegram_admin_ids))),
                        ("TELEGRAM_API_BASE_URL", api),
                    ],
                )
            )
        if self.line_token:
            api = "" if self.line_api_base_url == DEFAULT_LINE_API else self.line_api_base_url
            bot = self.line_bot or "the bot"
            blocks.append(
                (
                    f"LINE: {bot}, by webhook at SKILLGATE_PUBLIC_URL/webhook/line.",
                    [
                        ("LINE_CHANNEL_SECRET", self.line_secret),
                        ("LINE_CHANNEL_ACCESS_TOKEN", self.line_token),
                        ("LINE_ADMIN_IDS", ",".join(self.line_admin_ids)),
                        ("LINE_API_BASE_URL", api),
                    ],
                )
            )
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
            "# Private (mode 600): it holds secrets. Every other setting: .env.example, README.",
            "# The environment overrides this file.",
        ]
        for comment, lines in self.sections():
            if not lines:
                continue
            out += ["", f"# {comment}", *(f"{k}={quote(v)}" for k, v in lines)]
        return "\n".join(out) + "\n"
