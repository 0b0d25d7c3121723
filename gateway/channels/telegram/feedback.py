"""👍/👎 under Telegram answers: the keyboard, button presses, and the comment after 👎.

A button's callback_data is "<action>:<value>" of the core's `Button`, e.g. "rate:42:-1"
(well under Telegram's 64 bytes). A press is checked against the stored answer (same chat,
same Telegram message), acknowledged at once, stored as the user's one rating of that answer
and shown on the keyboard. After 👎 the bot asks what went wrong with a ForceReply prompt;
only a reply *to that prompt* (within `COMMENT_MINUTES`) becomes the comment, so a user who
ignores it and asks something new simply gets an answer.
"""

from __future__ import annotations

import logging
import re
import time
from typing import TYPE_CHECKING

from telegram import CallbackQuery, ForceReply, InlineKeyboardButton, InlineKeyboardMarkup, User
from telegram import Message as TgMessage
from telegram.helpers import mention_html

from gateway.channels.telegram.format import Part
from gateway.channels.telegram.send import NotModified, Target
from gateway.core.models import Button, ChatRef, rating_buttons
from gateway.core.records import Awaiting
from gateway.errors import ChannelError

if TYPE_CHECKING:
    from gateway.channels.telegram.channel import TelegramChannel

log = logging.getLogger(__name__)

PURPOSE = "feedback_comment"
COMMENT_MINUTES = 10
MAX_COMMENT = 2000
CHOSEN = "✓ "
ASK = "What went wrong? Reply to this message, or ignore it."
_RATE = re.compile(r"rate:([0-9]{1,18}):([+-]1)")  # \d would take any script's digits


def callback_data(button: Button) -> str:
    """The callback_data that carries a core button (at most 64 bytes, as Telegram requires)."""
    data = f"{button.action}:{button.value}"
    if len(data.encode()) > 64:
        raise ValueError(f"callback data too long: {data!r}")
    return data


def keyboard(buttons: list[Button], chosen: str | None = None) -> InlineKeyboardMarkup:
    """One row of inline buttons; the one whose value is `chosen` is marked."""
    row = [
        InlineKeyboardButton(
            (CHOSEN if b.value == chosen else "") + b.label, callback_data=callback_data(b)
        )
        for b in buttons
    ]
    return InlineKeyboardMarkup([row])


def parse_rating(data: str | None) -> tuple[int, int] | None:
    """(answer id, +1 or -1) from a rating button's data, or None."""
    match = _RATE.fullmatch(data or "")
    return None if match is None else (int(match.group(1)), int(match.group(2)))


class FeedbackHandler:
    """Handles rating presses and the comments that follow a 👎."""

    def __init__(self, channel: TelegramChannel) -> None:
        self.channel = channel

    async def on_press(self, query: CallbackQuery) -> None:
        """Acknowledge, check and store one press, then show it on the keyboard."""
        rating = parse_rating(query.data)
        message = query.message
        if rating is None or not isinstance(message, TgMessage):
            await self._ack(query, "This button no longer works.")
            return
        answer_id, value = rating
        user = query.from_user
        if not self.channel.allowed(user.id):
            await self._ack(query, "Sorry, this bot is private.")
            return
        if not await self._belongs(answer_id, message):
            log.warning("rejected a rating of answer %s from chat %s", answer_id, message.chat.id)
            await self._ack(query, "This button no longer works.")
            return
        await self._ack(query, "Thanks for the feedback!" if value > 0 else "Thanks, noted.")
        store = self.channel.services.store
        await store.set_feedback(answer_id, str(user.id), value)
        chosen = f"{answer_id}:{value:+d}"
        try:
            await self.channel.sender.call(
                "editMessageReplyMarkup",
                lambda: message.edit_reply_markup(keyboard(rating_buttons(answer_id), chosen)),
            )
        except NotModified:
            pass  # a second tap on the same button
        except ChannelError as exc:  # the rating is stored; the check mark is a courtesy
            log.warning("could not show the rating on the keyboard: %s", exc)
        if value < 0:
            await self._ask_comment(answer_id, message, user)

    async def take_comment(self, message: TgMessage, chat: ChatRef, text: str) -> bool:
        """Store a reply to the "what went wrong?" prompt as the comment; False if it is not one."""
        replied = message.reply_to_message
        if replied is None or chat.user_id is None:
            return False
        store = self.channel.services.store
        waiting = await store.peek_awaiting(self.channel.name, chat.chat_id, chat.user_id)
        if (
            waiting is None
            or waiting.purpose != PURPOSE
            or waiting.prompt_message_id != str(replied.message_id)
        ):
            return False
        await store.set_feedback_comment(int(waiting.ref), chat.user_id, text[:MAX_COMMENT])
        await store.take_awaiting(self.channel.name, chat.chat_id, chat.user_id)
        try:
            await self.channel.sender.send(
                Target.of(chat),
                Part.of_text("Thanks, I've noted that."),
                reply_to=message.message_id,
            )
        except ChannelError as exc:  # the comment is stored; the thank-you is a courtesy
            log.warning("could not thank for a comment: %s", exc)
        return True

    async def _belongs(self, answer_id: int, message: TgMessage) -> bool:
        """The rated answer is a normal answer sent in this chat, carried by this message."""
        store = self.channel.services.store
        answer = await store.get_message(answer_id)
        if answer is None or answer.role != "assistant" or answer.kind != "normal":
            return False
        session = await store.get_session(answer.session_id)
        if session is None or session.channel != self.channel.name:
            return False
        if session.chat_id != str(message.chat.id):
            return False
        ids = answer.platform_message_ids
        return not ids or str(message.message_id) in ids

    async def _ask_comment(self, answer_id: int, message: TgMessage, user: User) -> None:
        store = self.channel.services.store
        chat_id, user_id = str(message.chat.id), str(user.id)
        waiting = await store.peek_awaiting(self.channel.name, chat_id, user_id)
        if waiting is not None and waiting.purpose == PURPOSE and waiting.ref == str(answer_id):
            return  # already asked about this answer
        is_group = message.chat.type != "private"
        # In a group a selective ForceReply reaches only the users mentioned in the prompt.
        if is_group:
            part = Part(f"{mention_html(user.id, user.first_name)}, w{ASK[1:]}", ASK)
        else:
            part = Part.of_text(ASK)
        thread = message.message_thread_id if message.is_topic_message else None
        target = Target(message.chat.id, thread, is_group)
        placeholder = "What went wrong?"
        prompt = await self.channel.sender.send(
            target, part, markup=ForceReply(selective=True, input_field_placeholder=placeholder)
        )
        now = time.time()
        await store.set_awaiting(
            Awaiting(
                channel=self.channel.name,
                chat_id=chat_id,
                user_id=user_id,
                purpose=PURPOSE,
                ref=str(answer_id),
                prompt_message_id=str(prompt.message_id),
                expires_at=now + COMMENT_MINUTES * 60,
                created_at=now,
            )
        )

    async def _ack(self, query: CallbackQuery, text: str) -> None:
        """answerCallbackQuery; a late or repeated answer (after a retry) is not an error."""
        try:
            await self.channel.sender.call("answerCallbackQuery", lambda: query.answer(text))
        except ChannelError as exc:
            log.info("could not acknowledge a button press: %s", exc)
