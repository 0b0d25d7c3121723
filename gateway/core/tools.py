"""The tools the agent may call besides `load_skill`, as a port that `gateway.tools` implements.

The agent asks the toolbox which tools this turn may offer (who asks, and where, decide it)
and hands every call back to it; the toolbox checks the policy again when it runs one. A
tool that needs the user's consent asks through `ToolAccess.confirm`, which the
conversation layer provides (a card with ✅/✖ in the chat the question came from).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pydantic import BaseModel

from gateway.core.models import Picture

ToolStatus = Literal["ok", "error", "timeout", "refused", "declined", "unavailable"]
"""What became of one call: refused by its policy, declined (or not confirmed) by the user."""
TOOL_FAILURES: frozenset[str] = frozenset({"error", "timeout", "unavailable"})
"""The statuses of a call the tool did not answer well; refused and declined are decisions."""


class ToolCallRecord(BaseModel):
    """One tool call as the answer's trace keeps it: never its result, only the result's size."""

    server: str
    tool: str
    arguments: str
    """The arguments as JSON, secrets masked, bounded."""
    status: ToolStatus
    duration_ms: int = 0
    result_chars: int = 0
    """Characters of the result the tool returned (before the cap)."""
    capped: bool = False
    detail: str | None = None
    """Why it failed or was refused, masked."""


@dataclass(frozen=True)
class ToolSpec:
    """A tool as offered to the model: `<server>__<tool>`, what it does, its parameters."""

    name: str
    description: str
    parameters: dict[str, Any]

    def as_function(self) -> dict[str, Any]:
        """The chat-completions `tools` entry."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters or {"type": "object", "properties": {}},
            },
        }


@dataclass(frozen=True)
class ToolOutcome:
    """What the model is told about a call, and what the trace keeps of it."""

    text: str
    record: ToolCallRecord
    pictures: tuple[Picture, ...] = ()
    """Pictures the call made, for the reply (never shown to the model)."""


CONFIRM_CHARS = 3000
"""The most characters a confirmation shows of a call's arguments: a call whose arguments
take more is refused for confirmation, never shown cut."""


@dataclass(frozen=True)
class AskedCall:
    """A call as its user is asked about it: every argument on its own line, whole and
    masked only for secrets, and the digest of exactly the arguments that run."""

    lines: tuple[str, ...]
    digest: str
    """Of the tool's name and its arguments' canonical JSON (`gateway.tools.results`)."""

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


class Confirm(Protocol):
    """Asks the user who wrote the message whether `tool` may run with the arguments shown."""

    async def __call__(self, tool: str, call: AskedCall) -> bool: ...


class Schedule(Protocol):
    """Makes the task a `schedule` call asks for and shows it to the user with a Cancel
    button; returns what the model is told, and whether the task was refused (bad or
    past time, a limit)."""

    async def __call__(self, arguments: dict[str, Any]) -> tuple[str, bool]: ...


@dataclass(frozen=True)
class ToolAccess:
    """Who the turn is for, which decides the tools it may use."""

    admin: bool = False
    group: bool = False
    confirm: Confirm | None = None
    """None where nobody can be asked (a terminal, a test): `confirm` tools do not run."""
    may_draw: Callable[[], Awaitable[str | None]] | None = None
    """Why this turn may not have one more picture made (the user's daily limit), or None;
    None itself: no limit here."""
    schedule: Schedule | None = None
    """Makes a scheduled task for this turn's user in this chat (the `schedule` tool); None
    where no task can be made (a terminal, a turn that is itself a scheduled task)."""


@dataclass(frozen=True)
class ToolInfo:
    """A live tool as synthesis and review are told of it: never how it is called."""

    name: str
    policy: str
    read_only: bool


class ToolDirectory(Protocol):
    """The live tools and their policies (for synthesis's prompt)."""

    def directory(self) -> list[ToolInfo]: ...


class Toolbox(Protocol):
    """The configured tools (MCP servers and built-in ones)."""

    def offer(self, access: ToolAccess) -> list[ToolSpec]:
        """The tools this turn may use, live ones only."""
        ...

    async def call(self, name: str, arguments: dict[str, Any], access: ToolAccess) -> ToolOutcome:
        """Run one call, its policy checked again; never raises for a tool's failure."""
        ...

    def over_limit(self, name: str, turn_calls: int, round_calls: int) -> ToolOutcome | None:
        """The refusal of a call past the turn's or the round's number of calls, else None."""
        ...
