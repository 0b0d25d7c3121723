"""Which tools a turn may use, decided when they are offered and again when one is called.

Defaults: a read-only tool of a server the operator marked trusted runs (`auto`); every
other tool asks the user first (`confirm`); `admin` tools exist only on admins' turns, and
ask the admin first too unless SKILLGATE_TOOL_ADMIN_CONFIRM is off (a line of someone else's
kept as group context must not make one run unseen); `off` ones never. In a group no tool
is offered unless its entry says `groups: allow`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from gateway.core.tools import ToolAccess
from gateway.tools.config import Policy, ServerConfig, WebToolConfig


class ServerUnavailable(Exception):
    """The server is not running (it failed to start, or died): its reason."""


class CallFailed(Exception):
    """The server answered the call with a protocol error."""


class CallRefused(CallFailed):
    """The tool itself refused the call (a web_fetch of a private address)."""


@dataclass(frozen=True)
class RemoteTool:
    """A tool as a server lists it."""

    name: str
    description: str
    schema: dict[str, Any]
    read_only: bool


class Backend(Protocol):
    """Where tools run: an MCP server, or the built-in web tools."""

    name: str
    transport: str
    """"stdio", "http", or "built-in"."""
    tools: list[RemoteTool]
    error: str | None

    @property
    def alive(self) -> bool: ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def probe(self) -> None:
        """Look whether it still runs (and start it again if it does not)."""
        ...

    async def call(self, tool: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        """The result's text, and whether the tool reported an error."""
        ...


@dataclass(frozen=True)
class Rule:
    """A tool's policy and whether groups may use it."""

    policy: Policy
    groups: bool


def server_rule(server: ServerConfig, tool: RemoteTool) -> Rule:
    """The operator's word for a server's tool, else the defaults."""
    own = server.tools.get(tool.name)
    policy = own.policy if own is not None and own.policy is not None else None
    if policy is None:
        policy = "auto" if server.trusted and tool.read_only else "confirm"
    groups = own.groups if own is not None and own.groups is not None else server.groups
    return Rule(policy, groups == "allow")


def web_rule(config: WebToolConfig) -> Rule:
    """A built-in web tool: `confirm` unless the operator says otherwise."""
    return Rule(config.policy or "confirm", config.groups == "allow")


def asks(rule: Rule, admin_confirm: bool = True) -> bool:
    """Whether a call under `rule` runs only once its user pressed ✅."""
    return rule.policy == "confirm" or (rule.policy == "admin" and admin_confirm)


def refusal(rule: Rule, access: ToolAccess, admin_confirm: bool = True) -> str | None:
    """Why this turn may not use a tool under `rule`, or None when it may."""
    if rule.policy == "off":
        return "the tool is off"
    if rule.policy == "admin" and not access.admin:
        return "only admins may use this tool"
    if access.group and not rule.groups:
        return "tools are not used in groups"
    if asks(rule, admin_confirm) and access.confirm is None:
        return "nobody can be asked to confirm here"
    return None
