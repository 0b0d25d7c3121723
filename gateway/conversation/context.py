"""Group context: what a group said without addressing the bot, for its next question.

Opt-in (SKILLGATE_GROUP_CONTEXT_MESSAGES above 0). A group's unaddressed text messages are
kept with their sender's display name, bounded while they are kept (the last N, a token
budget, an age); when the bot is next addressed there they go to the model fenced, as a
user message before the question, and are cleared. They are no messages of a conversation:
never rated, never synthesis evidence, never memory; /forget and retention delete them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from gateway.config import ConversationSettings
from gateway.conversation.content import words
from gateway.conversation.models import Message
from gateway.core.models import ChatRef
from gateway.core.records import GroupLine
from gateway.core.tokens import estimate_tokens

KEPT_CHARS = 1000
"""What one kept line holds at most (a pasted page is cut)."""


class ContextStore(Protocol):
    """Where the lines are kept (`gateway.store.context`)."""

    async def keep_group_line(
        self,
        channel: str,
        chat_id: str,
        line: GroupLine,
        *,
        tokens: int,
        now: float,
        max_lines: int,
        max_tokens: int,
        since: float,
    ) -> None: ...


class GroupContext:
    """Keeps one channel's unaddressed group lines, and says which a question takes."""

    def __init__(
        self,
        settings: ConversationSettings,
        store: ContextStore,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        """How much of a group is kept (`group_context_messages` 0: nothing)."""
        self.store = store
        self.clock = clock

    async def keep(self, message: Message) -> None:
        """Keep an unaddressed group message's words (not an edit, a command or bare media)."""
        if self.settings.group_context_messages <= 0 or not message.chat.is_group:
            return
        if message.edited or message.command is not None:
            return
        text = words(message)
        if text is None or not text.strip():
            return
        text = text.strip()[:KEPT_CHARS]
        now, chat = self.clock(), message.chat
        await self.store.keep_group_line(
            chat.channel,
            chat.chat_id,
            GroupLine(user_id=chat.user_id, user_name=message.user_name, text=text),
            tokens=estimate_tokens(text) + 4,
            now=now,
            max_lines=self.settings.group_context_messages,
            max_tokens=self.settings.group_context_tokens,
            since=now - self.settings.group_context_seconds,
        )

    def since(self, chat: ChatRef) -> float | None:
        """From when a question in `chat` takes the kept lines; None: it takes none."""
        if self.settings.group_context_messages <= 0 or not chat.is_group:
            return None
        return self.clock() - self.settings.group_context_seconds
