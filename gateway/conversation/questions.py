"""Questions the bot asked a user whose answer is not a normal turn.

One open question per user and chat (a later one replaces it), for a few minutes:
"what went wrong?" after 👎, "why reject?" after a rejection. Where the platform
asks with a prompt the user replies to (Telegram), only a reply to that prompt is
the answer; elsewhere (LINE) the user's next text is.
"""

from __future__ import annotations

from collections.abc import Callable

from gateway.conversation.ports import AwaitingStore
from gateway.core.models import ChatRef
from gateway.core.records import Awaiting


class Questions:
    """Open questions, kept in the store so that a restart forgets none."""

    def __init__(self, store: AwaitingStore, clock: Callable[[], float]) -> None:
        self.store = store
        self.clock = clock

    async def ask(
        self,
        chat: ChatRef,
        user_id: str,
        purpose: str,
        ref: str,
        *,
        prompt_message_id: str | None,
        seconds: float,
    ) -> None:
        """Remember the question; `prompt_message_id` when only a reply to it answers it."""
        now = self.clock()
        await self.store.set_awaiting(
            Awaiting(
                channel=chat.channel,
                chat_id=chat.chat_id,
                user_id=user_id,
                purpose=purpose,
                ref=ref,
                prompt_message_id=prompt_message_id,
                expires_at=now + seconds,
                created_at=now,
            )
        )

    async def open(
        self, chat: ChatRef, user_id: str, purpose: str | None = None
    ) -> Awaiting | None:
        """The user's unexpired question in this chat (of this purpose, if given)."""
        question = await self.store.peek_awaiting(chat.channel, chat.chat_id, user_id, self.clock())
        if question is None or (purpose is not None and question.purpose != purpose):
            return None
        return question

    async def close(self, question: Awaiting) -> None:
        """The question is answered (or no longer applies)."""
        await self.store.take_awaiting(question.channel, question.chat_id, question.user_id)
