"""The tools file (`tools.yaml` in the data dir, or SKILLGATE_TOOLS_FILE): servers and web tools.

    servers:
      time:
        command: mcp-server-time
        trusted: true            # its read-only tools run without asking
      git:
        command: mcp-server-git
        args: [--repository, /srv/notes]
        tools:
          git_reset: {policy: admin}
      docs:
        url: https://mcp.example.com/mcp
        headers: {Authorization: DOCS_MCP_AUTH}   # the value is read from that variable
    web:
      search: {policy: auto, groups: allow}
      fetch: {}
    schedule: {}                 # the model may set reminders and agent tasks

A stdio server sees only a minimal environment (PATH, HOME, ...) and the variables named
in its `env`; names that hold the gateway's own credentials are refused here.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gateway.config import Settings
from gateway.errors import ConfigError

Policy = Literal["auto", "confirm", "admin", "off"]
SERVER_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")


def _own_prefixes() -> tuple[str, ...]:
    """The prefixes of every variable the gateway's settings read (each platform's too)."""
    aliases = {f.validation_alias for f in Settings.model_fields.values()}
    return tuple(sorted({a.split("_", 1)[0] + "_" for a in aliases if isinstance(a, str)}))


OWN_PREFIXES = _own_prefixes()
"""Variables of the gateway itself: never passed to a tool process."""


class ToolRule(BaseModel):
    """What the operator says about one tool."""

    model_config = ConfigDict(extra="forbid")

    policy: Policy | None = None
    """None: the default (read-only tools of a trusted server `auto`, the rest `confirm`)."""
    groups: Literal["allow", "deny"] | None = None


class ServerConfig(BaseModel):
    """One MCP server: a command (stdio) or a URL (Streamable HTTP)."""

    model_config = ConfigDict(extra="forbid")

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: list[str] = Field(default_factory=list)
    """Names of environment variables the process may see (values from the gateway's)."""
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    """Header name: the environment variable holding its value."""
    trusted: bool = False
    groups: Literal["allow", "deny"] = "deny"
    tools: dict[str, ToolRule] = Field(default_factory=dict)

    @field_validator("env")
    @classmethod
    def _no_own_secrets(cls, names: list[str]) -> list[str]:
        for name in names:
            if name.upper().startswith(OWN_PREFIXES):
                raise ValueError(f"{name} is the gateway's own setting; a tool never sees it")
        return names

    @property
    def transport(self) -> str:
        return "stdio" if self.command else "http"

    def environment(self) -> dict[str, str]:
        """The named variables that are set (the SDK adds PATH, HOME and the like)."""
        return {name: os.environ[name] for name in self.env if name in os.environ}

    def header_values(self) -> dict[str, str]:
        """Each header with its value from the environment (missing ones left out)."""
        return {h: os.environ[var] for h, var in self.headers.items() if var in os.environ}


class WebToolConfig(BaseModel):
    """One built-in web tool, switched on by being listed."""

    model_config = ConfigDict(extra="forbid")

    policy: Policy | None = None
    groups: Literal["allow", "deny"] = "deny"


class WebConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    search: WebToolConfig | None = None
    fetch: WebToolConfig | None = None


class ToolsFile(BaseModel):
    """The whole file."""

    model_config = ConfigDict(extra="forbid")

    servers: dict[str, ServerConfig] = Field(default_factory=dict)
    web: WebConfig = Field(default_factory=WebConfig)
    image: WebToolConfig | None = None
    """`generate_image`'s policy and groups (on with IMAGE_MODEL; default `confirm`, no groups)."""
    schedule: WebToolConfig | None = None
    """The `schedule` tool, on by being listed (default `auto`: the user sees each task made,
    with a Cancel button; no groups)."""

    @field_validator("servers")
    @classmethod
    def _valid_servers(cls, servers: dict[str, ServerConfig]) -> dict[str, ServerConfig]:
        for name, server in servers.items():
            if not SERVER_NAME.match(name) or "__" in name:
                raise ValueError(f"server name {name!r}: 1-32 of a-z, 0-9, _ and -, no '__'")
            if bool(server.command) == bool(server.url):
                raise ValueError(f"server {name}: give either command (stdio) or url (HTTP)")
        return servers

    @property
    def empty(self) -> bool:
        return (
            not self.servers
            and self.web.search is None
            and self.web.fetch is None
            and self.schedule is None
        )


def tools_file_path(data_dir: Path, configured: Path | None) -> Path:
    """SKILLGATE_TOOLS_FILE, else `tools.yaml` in the data dir."""
    return configured if configured is not None else data_dir / "tools.yaml"


def load_tools_file(path: Path) -> ToolsFile:
    """The file's servers and web tools; an absent file is no tools; ConfigError if invalid."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ToolsFile()
    except OSError as exc:
        raise ConfigError(f"cannot read the tools file {path}: {exc.strerror}") from exc
    import yaml  # only where a tools file exists

    try:
        data = yaml.safe_load(text) or {}
        return ToolsFile.model_validate(data)
    except yaml.YAMLError as exc:
        raise ConfigError(f"the tools file {path} is not valid YAML: {exc}") from exc
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
        )
        raise ConfigError(f"the tools file {path}: {problems}") from exc
