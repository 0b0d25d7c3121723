"""👍/👎 on answers, for every platform: a press rates an answer, after 👎 a comment may follow.

A press is checked against the stored answer (a normal answer given in this chat, and on
platforms that say so, carried by the pressed message) before it is stored as the user's one
rating of that answer. After 👎 the bot asks what went wrong (not again once a comment was
given); the answer to that question (on Telegram only a reply to the prompt, in a group only
a message to the bot) becomes the comment, anything else is a normal turn.
"""

from __future__ import annotations

import logging
import re

from gateway.conversation.language import Languages
from gateway.conversation.models import Press, Profile
from gateway.conversation.ports import FeedbackStore, RatedAnswers, RatingReplies
from gateway.conversation.questions import Questions
from gateway.core.records import Awaiting
from gateway.errors import ChannelError
from gateway.i18n import N_

log = logging.getLogger(__name__)

COMMENT_PURPOSE = "feedback_comment"
MAX_COMMENT = 2000
_RATE = re.compile(r"rate:([0-9]{1,18}):([+-]1)")  # \d would take any script's digits

STALE = N_("This button no longer works.")
PRIVATE = N_("Sorry, this bot is private.")
THANKS_UP = N_("Thanks for the feedback!")
THANKS_DOWN = N_("Thanks, noted.")
NOTHING_TO_RATE = N_("Nothing to rate yet: this conversation has no answer so far.")


async def rateable(store: RatedAnswers, answer_id: int) -> bool:
    """A rating command (/good, /bad) rates the chat's last answer only while its session is
    open: after /new, or once the session went idle, there is nothing to rate.

    Buttons name the answer they rate, so they need no such rule.
    """
    answer = await store.get_message(answer_id)
    session = None if answer is None else await store.get_session(answer.session_id)
    return session is not None and session.finished_at is None


def parse_rating(data: str | None) -> tuple[int, int] | None:
    """(answer id, +1 or -1) from a rating button's data "rate:<id>:<±1>", or None."""
    match = _RATE.fullmatch(data or "")
    return None if match is None else (int(match.group(1)), int(match.group(2)))


class Feedback:
    """Rating presses and the comments that follow a 👎, for one channel."""

    def __init__(
        self,
        profile: Profile,
        store: FeedbackStore,
        questions: Questions,
        languages: Languages,
    ) -> None:
        self.profile = profile
        self.store = store
        self.questions = questions
        self.languages = languages

    async def on_press(self, press: Press, rating: tuple[int, int], out: RatingReplies) -> None:
        """Check and store one rating press (`rating`: its answer id and ±1, as parsed from its
        data), then show it and, after 👎, ask what went wrong.

        One store round trip reads what the press needs (the languages, the user's open
        question, the rated answer) and keeps the rating; after 👎 a second one remembers the
        question once its prompt is out (where only a reply to the prompt answers it, its id).
        """
        user = press.chat.user_id
        if user is None or not self.profile.audience.allowed(user):
            out.texts = await self.languages.texts(press.chat, out)
            await out.acknowledge(out.texts(PRIVATE), courtesy=True)
            return
        answer_id, value = rating
        chat = press.chat
        state = await self.store.rate_answer(
            chat.channel,
            chat.chat_id,
            user,
            answer_id,
            value,
            self.questions.clock(),  # the open question's window follows the questions' clock
            pressed=press.message_id,
        )
        out.texts = texts = await self.languages.texts(chat, out, state.language)
        stored = state.feedback
        if stored is None:
            log.warning("rejected a rating of answer %s from chat %s", answer_id, chat.chat_id)
            await out.acknowledge(texts(STALE), courtesy=True)
            return
        await out.acknowledge(texts(THANKS_UP if value > 0 else THANKS_DOWN), courtesy=True)
        if self.profile.capabilities.edit:  # else the buttons stay as they were sent
            try:
                await out.show_rating(answer_id, value)
            except ChannelError as exc:  # the rating is stored; showing it is a courtesy
                log.warning("could not show the rating on the answer: %s", exc)
        asked = state.awaiting
        if asked is not None and asked.purpose != COMMENT_PURPOSE:
            asked = None
        about_this = asked is not None and asked.ref == str(answer_id)
        if value < 0 and not about_this and not stored.comment:
            prompt = await out.ask_comment(answer_id)
            await self.questions.ask(
                chat,
                user,
                COMMENT_PURPOSE,
                str(answer_id),
                prompt_message_id=prompt,
                seconds=self.profile.dialect.comment_seconds,
            )
        elif value > 0 and asked is not None and about_this:
            # Changed to 👍: the question about this answer no longer applies.
            await self.questions.close(asked)

    async def take_comment(
        self, question: Awaiting, text: str, out: RatingReplies, *, message_id: str | None = None
    ) -> None:
        """Keep `text` as the comment the question asked for, thank, and close the question.

        `message_id` is the platform's id of the message it came in (so unsend can forget it).
        """
        await self.store.set_feedback_comment(
            int(question.ref),
            question.user_id,
            text.strip()[:MAX_COMMENT],
            platform_message_id=message_id,
        )
        try:
            await out.notice(out.texts(self.profile.dialect.thanks_for_comment), quote=True)
        except ChannelError as exc:  # the comment is stored; the thank-you is a courtesy
            log.warning("could not thank for a comment: %s", exc)
        await self.questions.close(question)
