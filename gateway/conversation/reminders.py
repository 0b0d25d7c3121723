"""What a due reminder says in its chat, whichever platform carries it.

The task worker (`gateway.runtime.schedule`) decides that an occurrence is due and owned by
this process; this says it: the reminder's text, marked when it comes late, or a notice
that it was missed while the bot was offline. The time is shown in the task's timezone.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Protocol

from gateway.core.models import ChatRef
from gateway.core.scheduled import Fence, Occurrence
from gateway.core.task_times import zone
from gateway.errors import ChannelError
from gateway.i18n import N_, Texts

ON_TIME = N_("⏰ {text}")
LATE = N_("⏰ {text}\n(late: the bot was offline at {time})")
MISSED = N_("⏰ Missed while the bot was offline ({time}): {text}")


class NoticeSender(Protocol):
    """A platform's way to start a message in a chat (the card transports have it)."""

    async def send_notice(self, chat_id: str, text: str, ref: str) -> None:
        """One plain message; `ref` keeps a retried push from arriving twice where it can."""
        ...


class ChatTexts(Protocol):
    """The language of a chat the bot writes to first (`Languages.for_chat`)."""

    async def for_chat(self, chat: ChatRef) -> Texts: ...


def reminder_text(occurrence: Occurrence, texts: Texts) -> str:
    """The message for one occurrence, its due time in the task's timezone."""
    task = occurrence.task
    when = datetime.fromtimestamp(occurrence.due_at, zone(task.timezone))
    shown = f"{when:%Y-%m-%d %H:%M} {task.timezone}"
    template = {"on_time": ON_TIME, "late": LATE, "missed": MISSED}[occurrence.timing]
    return texts(template, text=task.text, time=shown)


class ReminderDelivery:
    """Says each due reminder through the running channel it belongs to."""

    def __init__(self, senders: Mapping[str, NoticeSender], languages: ChatTexts) -> None:
        self.senders = senders
        self.languages = languages

    async def __call__(self, occurrence: Occurrence, fence: Fence) -> None:
        task = occurrence.task
        sender = self.senders.get(task.channel)
        if sender is None:
            raise ChannelError(f"{task.channel} is not running here")  # retried, then failed
        chat = ChatRef(channel=task.channel, chat_id=task.chat_id, user_id=task.user_id)
        text = reminder_text(occurrence, await self.languages.for_chat(chat))
        await fence()
        await sender.send_notice(task.chat_id, text, occurrence.ref)
