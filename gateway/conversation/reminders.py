"""What a due task says in its chat, whichever platform carries it.

The task worker (`gateway.runtime.schedule`) decides that an occurrence is due and owned by
this process; this says it: a reminder's text, marked when it comes late, or a notice
that it was missed while the bot was offline. The time is shown in the task's timezone.
An agent task's occurrence is answered by the chat's conversation, as a message from its
user would be (`Conversation.scheduled`), through a responder the channel opens for a chat
nobody just wrote in; every send is fenced by the occurrence's claim.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime
from typing import Protocol

from gateway.conversation.fence import TaskFencedResponder
from gateway.conversation.ports import Answers, Responder
from gateway.core.models import ChatRef
from gateway.core.scheduled import Fence, Occurrence, ScheduledTask
from gateway.core.task_times import zone
from gateway.errors import ChannelError
from gateway.i18n import N_, Texts

log = logging.getLogger(__name__)

ON_TIME = N_("⏰ {text}")
LATE = N_("⏰ {text}\n(late: the bot was offline at {time})")
MISSED = N_("⏰ Missed while the bot was offline ({time}): {text}")
LATE_ANSWER = N_("🗓 Late: the bot was offline at {time}. Here is the answer to: {text}")


class TaskChannel(Protocol):
    """A running channel's way to answer in a chat on its own (an agent task's answer)."""

    def task_responder(self, chat: ChatRef, ref: str) -> Responder | None:
        """Replies in `chat` with nothing to reply to; `ref` names the occurrence, the same
        on every attempt (a LINE push's retry keys); None before the channel started."""
        ...


class TaskAnswers(Protocol):
    """The conversation that answers a channel's agent tasks (`Conversation.scheduled`)."""

    async def scheduled(self, occurrence: Occurrence, out: Answers) -> None: ...


def task_chat(task: ScheduledTask) -> ChatRef:
    """The chat a task speaks in: a group's when it was set there (not the user's own)."""
    is_group = task.user_id is None or task.chat_id != task.user_id
    return ChatRef(
        channel=task.channel, chat_id=task.chat_id, user_id=task.user_id, is_group=is_group
    )


def shown_due(occurrence: Occurrence) -> str:
    task = occurrence.task
    when = datetime.fromtimestamp(occurrence.due_at, zone(task.timezone))
    return f"{when:%Y-%m-%d %H:%M} {task.timezone}"


def late_text(occurrence: Occurrence, texts: Texts) -> str:
    """The line before an agent task's answer that comes late."""
    return texts(LATE_ANSWER, time=shown_due(occurrence), text=occurrence.task.text)


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
    template = {"on_time": ON_TIME, "late": LATE, "missed": MISSED}[occurrence.timing]
    return texts(template, text=occurrence.task.text, time=shown_due(occurrence))


class PushWatch(Protocol):
    """A channel's count of the pushes its tasks make (`TaskCommands.pushed`)."""

    async def pushed(self) -> None: ...


class ReminderDelivery:
    """Says each due task through the running channel it belongs to: a reminder's text, an
    agent task's answer (a missed one of either kind: the notice that it was missed)."""

    def __init__(
        self,
        senders: Mapping[str, NoticeSender],
        languages: ChatTexts,
        *,
        channels: Mapping[str, TaskChannel] | None = None,
        answers: Mapping[str, TaskAnswers] | None = None,
        watches: Mapping[str, PushWatch] | None = None,
    ) -> None:
        self.senders = senders
        self.languages = languages
        self.channels = channels or {}
        self.answers = answers or {}
        self.watches = watches or {}
        """Each channel's push quota watch, told after each delivery (LINE's pushes)."""

    async def __call__(self, occurrence: Occurrence, fence: Fence) -> None:
        await self._say(occurrence, fence)
        watch = self.watches.get(occurrence.task.channel)
        if watch is None:
            return
        try:  # sent already: nothing here may make the occurrence be sent again
            await watch.pushed()
        except Exception:
            log.exception("counting task %d's push against the quota failed", occurrence.task.id)

    async def _say(self, occurrence: Occurrence, fence: Fence) -> None:
        task = occurrence.task
        if task.kind == "agent" and occurrence.timing != "missed":
            await self._answer(occurrence, fence)
            return
        sender = self.senders.get(task.channel)
        if sender is None:
            raise ChannelError(f"{task.channel} is not running here")  # retried, then failed
        chat = task_chat(task)
        text = reminder_text(occurrence, await self.languages.for_chat(chat))
        await fence()
        await sender.send_notice(task.chat_id, text, occurrence.ref)

    async def _answer(self, occurrence: Occurrence, fence: Fence) -> None:
        task = occurrence.task
        channel, answers = self.channels.get(task.channel), self.answers.get(task.channel)
        out = channel.task_responder(task_chat(task), occurrence.ref) if channel else None
        if out is None or answers is None:
            raise ChannelError(f"{task.channel} is not running here")  # retried, then failed
        await answers.scheduled(occurrence, TaskFencedResponder(out, fence))
