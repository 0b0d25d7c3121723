"""A rating press's one store round trip: what the press finds, and the rating it keeps.

Like a text message's `chat_state`, a 👍 or 👎 reads the chat's languages, the user's open
question and the rated answer in one statement, and stores the rating in the same
transaction when the answer is a normal answer given in the press's chat (carried by the
pressed message, where the platform says which).
"""

from __future__ import annotations

import json

from gateway.core.records import PressState
from gateway.store.conversations import store_rating
from gateway.store.languages import LANGUAGE_COLUMNS, LANGUAGE_JOIN, language_args, language_in
from gateway.store.registry import AWAITING_COLUMNS, AWAITING_JOIN, awaiting_in
from gateway.store.sql import Conn, QueriesBase, transaction

_ANSWER_COLUMNS = (
    "m.role as answer_role, m.kind as answer_kind, m.platform_message_ids as answer_ids,"
    " s.channel as answer_channel, s.chat_id as answer_chat"
)
_ANSWER_JOIN = "left join messages m on m.id = ? left join sessions s on s.id = m.session_id"


class RatingQueries(QueriesBase):
    """A 👍 or 👎 on an answer, checked and kept in one transaction."""

    @transaction
    async def rate_answer(
        self,
        c: Conn,
        channel: str,
        chat_id: str,
        user_id: str,
        answer_id: int,
        rating: int,
        now: float,
        *,
        pressed: str | None = None,
    ) -> PressState:
        """The chat's languages, the user's open question, and the rating stored unless the
        answer is no normal answer of this chat (or `pressed`, the platform's id of the
        message carrying the button, is not one of its messages)."""
        row = await c.fetchrow(
            f"select {LANGUAGE_COLUMNS}, {AWAITING_COLUMNS}, {_ANSWER_COLUMNS}"
            f" from (select 1 as one) as x {LANGUAGE_JOIN} {AWAITING_JOIN} {_ANSWER_JOIN}",
            *language_args(channel, chat_id, user_id),
            channel,
            user_id,
            channel,
            chat_id,
            user_id,
            now,
            answer_id,
        )
        assert row is not None  # the select always gives one row
        state = PressState(language=language_in(row), awaiting=awaiting_in(row))
        ids = json.loads(row["answer_ids"] or "[]")
        if (
            (row["answer_role"], row["answer_kind"]) != ("assistant", "normal")
            or (row["answer_channel"], row["answer_chat"]) != (channel, chat_id)
            or (pressed is not None and ids and pressed not in ids)
        ):
            return state
        state.feedback = await store_rating(c, answer_id, user_id, rating, now)
        return state
