"""👍/👎 on LINE: a postback rates an answer; after 👎 the user's next text is the comment."""

from __future__ import annotations

import time
from collections.abc import Callable

from gateway.core.models import ChatRef
from gateway.core.records import Awaiting
from gateway.store import Store

RATE_ACTION = "rate"
COMMENT_PURPOSE = "feedback_comment"
COMMENT_WINDOW = 300.0
"""Seconds after 👎 during which the user's next text is taken as the comment."""
MAX_COMMENT = 2000

ASK_WHAT_WENT_WRONG = "What went wrong? Tell me in your next message (optional)."
THANKS_FOR_COMMENT = "Thanks, I've noted that. It helps me get better."


def parse_rating(data: str) -> tuple[int, int] | None:
    """(message id, +1 or -1) from postback data "rate:<id>:+1", or None for anything else."""
    action, _, value = data.partition(":")
    message, _, rating = value.partition(":")
    # ASCII digits only: str.isdigit() also takes "²" and Arabic-Indic digits; ids fit 18.
    plain = message.isascii() and message.isdigit() and len(message) <= 18
    if action != RATE_ACTION or not plain or rating not in ("+1", "-1"):
        return None
    return int(message), int(rating)


class LineFeedback:
    """Ratings and comments, stored only for answers given in the same chat."""

    def __init__(self, store: Store, *, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.clock = clock

    async def rate(self, chat: ChatRef, user_id: str, message_id: int, rating: int) -> bool:
        """Record (or change) a rating; False unless the message is an answer in this chat."""
        message = await self.store.get_message(message_id)
        if message is None or message.role != "assistant":
            return False
        session = await self.store.get_session(message.session_id)
        if session is None or (session.channel, session.chat_id) != (chat.channel, chat.chat_id):
            return False
        if await self.store.set_feedback(message_id, user_id, rating) is None:
            return False
        pending = await self.pending_comment(chat, user_id)
        if rating < 0:
            now = self.clock()
            await self.store.set_awaiting(
                Awaiting(
                    channel=chat.channel,
                    chat_id=chat.chat_id,
                    user_id=user_id,
                    purpose=COMMENT_PURPOSE,
                    ref=str(message_id),
                    expires_at=now + COMMENT_WINDOW,
                    created_at=now,
                )
            )
        elif pending is not None and pending.ref == str(message_id):
            # Changed to 👍: the question about this answer no longer applies.
            await self.store.take_awaiting(chat.channel, chat.chat_id, user_id)
        return True

    async def pending_comment(self, chat: ChatRef, user_id: str) -> Awaiting | None:
        """The user's open "what went wrong?" question in this chat, if any."""
        question = await self.store.peek_awaiting(chat.channel, chat.chat_id, user_id, self.clock())
        return question if question is not None and question.purpose == COMMENT_PURPOSE else None

    async def save_comment(self, question: Awaiting, text: str) -> None:
        """Attach the text to the rating the question was about (idempotent)."""
        await self.store.set_feedback_comment(
            int(question.ref), question.user_id, text.strip()[:MAX_COMMENT]
        )

    async def close(self, question: Awaiting) -> None:
        """The question is answered: the user's next text is a normal turn again."""
        await self.store.take_awaiting(question.channel, question.chat_id, question.user_id)
