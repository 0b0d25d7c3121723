"""Scheduled tasks as every layer sees them: a task, one due occurrence of it, its outcome.

The store keeps them (`gateway.store.schedule`), the task worker claims and delivers them
(`gateway.runtime.schedule`), the conversation layer says them in the chat
(`gateway.conversation.reminders`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Literal, Protocol

from pydantic import BaseModel

Kind = Literal["reminder", "agent"]
"""A reminder says its fixed text at the time; an agent task's text is a prompt the agent
answers at the time, as it answers a message in that chat."""
Outcome = Literal["sent", "late", "missed", "failed"]
Status = Literal["active", "paused", "done", "cancelled"]


class NewTask(BaseModel):
    """What a task is made of when created."""

    channel: str
    chat_id: str
    user_id: str | None
    kind: Kind
    text: str
    repeat: str = "once"
    """once, daily, weekdays, weekly, monthly or cron."""
    cron: str | None = None
    """The five crontab fields of a repeating task (standard meaning: 0 or 7 is Sunday)."""
    timezone: str
    next_at: float


class ScheduledTask(NewTask):
    """A stored task, with its claim while an occurrence is being delivered."""

    id: int
    next_at: float | None  # type: ignore[assignment]  # None once finished
    status: Status
    claimed_by: str | None = None
    lease_until: float | None = None
    claim: int = 0
    failures: int = 0
    created_at: float
    last_run_at: float | None = None
    last_outcome: str | None = None


class TaskRun(BaseModel):
    """The outcome of one occurrence."""

    task_id: int
    due_at: float
    outcome: Outcome
    ran_at: float
    holder: str | None = None
    detail: str | None = None


class Occurrence(BaseModel):
    """One due time of a task, as it is handed to the delivery."""

    task: ScheduledTask
    due_at: float
    timing: Literal["on_time", "late", "missed"]

    @property
    def ref(self) -> str:
        """The same for every attempt at this occurrence (a LINE push's retry key)."""
        return f"task:{self.task.id}:{self.due_at:.0f}"


Fence = Callable[[], Awaitable[None]]
"""Raises ClaimLost when this process no longer owns the occurrence; called before a send."""


class Deliver(Protocol):
    """Says an occurrence in its chat (the reminder, or that it was missed).

    It calls `fence` immediately before each message it sends.
    """

    async def __call__(self, occurrence: Occurrence, fence: Fence) -> None: ...
