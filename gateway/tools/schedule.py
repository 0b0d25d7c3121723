"""The built-in `schedule` tool: the model sets a reminder or an agent task for the user.

On when the tools file lists `schedule:` (its policy `auto` by default: the user sees every
task made, with its next time in their timezone and a Cancel button; no groups unless the
entry says `groups: allow`). The call is made for the user of the turn, in the chat of the
turn, by the conversation layer (`ToolAccess.schedule`): this backend only declares the
tool. A turn where no task can be made (a scheduled task's own answer, a terminal) gets the
call refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gateway.tools.policy import CallFailed, RemoteTool

SCHEDULE = RemoteTool(
    name="schedule",
    description=(
        "Schedule a reminder or a task for the person you are talking with, when they ask"
        " to be reminded of something or to have something done at a time or on a schedule."
        " kind 'reminder' sends `what` as it is at the time; kind 'agent' has you answer"
        " `what` at the time (a request such as 'the three top headlines about X')."
        " `when` is the first time in the person's own timezone: 'YYYY-MM-DD HH:MM',"
        " 'tomorrow HH:MM', 'HH:MM' (the next one) or 'in 10m', 'in 2h', 'in 3d'; the"
        " same forms in Japanese, Chinese or Thai are understood ('明日 9:00', '10分後',"
        " '明天 下午3點', 'พรุ่งนี้ 9:00'). Give an hour that could be morning or evening"
        " as HH:MM on the 24-hour clock."
        " The person is shown the task with a button to cancel it. Returns the task's"
        " first time, or why it was not made."
    ),
    schema={
        "type": "object",
        "properties": {
            "when": {"type": "string", "description": "the first time, as described"},
            "what": {"type": "string", "description": "the reminder's text or the request"},
            "repeat": {
                "type": "string",
                "enum": ["once", "daily", "weekdays", "weekly", "monthly"],
                "description": "how it repeats from the first time on (default once)",
            },
            "kind": {
                "type": "string",
                "enum": ["reminder", "agent"],
                "description": "reminder (default) or agent",
            },
        },
        "required": ["when", "what"],
    },
    read_only=False,
)


@dataclass
class ScheduleTool:
    """`schedule` as a backend named `schedule`; its calls are made by the turn's access."""

    name: str = "schedule"
    transport: str = "built-in"
    error: str | None = None
    tools: list[RemoteTool] = field(default_factory=list)
    _alive: bool = False

    @property
    def alive(self) -> bool:
        return self._alive

    async def start(self) -> None:
        self.tools = [SCHEDULE]
        self._alive = True

    async def stop(self) -> None:
        self._alive = False

    async def probe(self) -> None:
        """Built in: it runs while the gateway does."""

    async def call(self, tool: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        raise CallFailed("a task can be scheduled only by a turn in a chat")
