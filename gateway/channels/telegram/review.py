"""Admins reviewing in Telegram: buttons, the reason after ❌, /proposals, /skills, /synthesize.

Admin rights come first: a press or command from anyone not in TELEGRAM_ADMIN_IDS
is answered "not allowed", logged, and changes nothing. Then the button's
signature: data that was not made by this bot is refused. After ❌ the rejection
is recorded at once and a ForceReply prompt asks for an optional reason; only a
reply to that prompt becomes the reason (so the 👎 comment prompt and this one
never take each other's answers).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from telegram import CallbackQuery, ForceReply, User
from telegram import Message as TgMessage

from gateway.channels.telegram.format import MAX_TEXT, Part
from gateway.channels.telegram.send import Target
from gateway.channels.text import split_text, utf16_len
from gateway.conversation.review import (
    INVALID_BUTTON,
    MAX_CARDS_SHOWN,
    NO_PENDING,
    NOT_ALLOWED,
    PRIVATE_ONLY,
    REASON_STORED,
    ask_reason,
    decide,
    more_pending,
    pending_reason,
    skills_text,
    store_reason,
    synthesize_text,
)
from gateway.core.models import ChatRef
from gateway.errors import ChannelError, ProposalNotFound
from gateway.skills.cards import build_card, full_diff

if TYPE_CHECKING:
    from gateway.channels.telegram.cards import TelegramCards
    from gateway.channels.telegram.channel import TelegramChannel

log = logging.getLogger(__name__)

ASK_REASON = (
    "Why reject proposal #{id} ({slug})? Reply to this message with the reason,"
    " or ignore it to leave the rejection without one."
)


def readable(user: User) -> str:
    """How a Telegram user is shown on cards: "Alice Smith (@alice)"."""
    return user.full_name + (f" (@{user.username})" if user.username else "")


class TelegramReview:
    """Card presses, rejection reasons and review commands for one Telegram channel."""

    def __init__(self, channel: TelegramChannel, cards: TelegramCards) -> None:
        self.channel = channel
        self.cards = cards

    async def on_press(self, query: CallbackQuery) -> None:
        """✅, ❌ or 🔍 on a card."""
        user, message = query.from_user, query.message
        if not self.cards.is_admin(user.id):
            log.warning(
                "telegram user %s (%s) pressed a proposal button but is not an admin;"
                " nothing changed",
                user.id,
                readable(user),
            )
            await self._ack(query, NOT_ALLOWED)
            return
        verified = self.cards.signer.verify(query.data)
        if verified is None or verified[0] == "skip" or not isinstance(message, TgMessage):
            log.warning("refused card button data %r from telegram user %s", query.data, user.id)
            await self._ack(query, INVALID_BUTTON)
            return
        action, proposal_id = verified
        if action == "diff":
            await self._ack(query, "Sending the full diff…")
            await self._full_diff(proposal_id, message)
            return
        services = self.channel.services
        decider = f"telegram:{user.id}"
        await services.store.set_reviewer_name(decider, readable(user))
        result = await decide(services, action, proposal_id, decider)
        await self._ack(query, result.text)
        if result.decision is not None and result.decision.outcome == "decided":
            # Perhaps an older copy that no sync edits: show the decision on this one too.
            await self._show(result.decision.proposal.id, message)
        if result.rejected_now:
            await self._ask_reason(proposal_id, message, user)

    async def take_reason(self, message: TgMessage, chat: ChatRef, text: str) -> bool:
        """Store a reply to the "why reject?" prompt as the reason; False if it is not one."""
        replied = message.reply_to_message
        if replied is None or chat.user_id is None:
            return False
        services = self.channel.services
        question = await pending_reason(services, self.channel.name, chat.chat_id, chat.user_id)
        if question is None or question.prompt_message_id != str(replied.message_id):
            return False
        if not self.cards.is_admin(int(chat.user_id)):
            return False
        await store_reason(services, question, text)
        await self._say(chat, REASON_STORED, reply_to=message.message_id)
        return True

    async def on_command(
        self, command: str, chat: ChatRef, user: User, reply_to: int | None
    ) -> None:
        """/proposals, /skills or /synthesize from someone who wrote to the bot."""
        if not self.cards.is_admin(user.id):
            log.warning(
                "telegram user %s (%s) tried /%s: not an admin", user.id, readable(user), command
            )
            await self._say(chat, NOT_ALLOWED, reply_to=reply_to)
            return
        if chat.is_group:
            await self._say(chat, PRIVATE_ONLY, reply_to=reply_to)
            return
        services = self.channel.services
        if command == "proposals":
            await self._proposals(chat)
        elif command == "skills":
            await self._say(chat, await skills_text(services))
        else:
            await self._say(chat, "Running a synthesis pass now…")
            await self._say(chat, await synthesize_text(services))

    async def _proposals(self, chat: ChatRef) -> None:
        services = self.channel.services
        pending = await services.store.pending_proposals()
        if not pending:
            await self._say(chat, NO_PENDING)
            return
        for p in pending[:MAX_CARDS_SHOWN]:
            card = await build_card(p, services.review, services.store)
            message_id = await self.cards.send_card(chat.chat_id, card)
            # This copy is now the one kept up to date in this chat.
            await services.store.card_delivered(
                p.id, self.channel.name, chat.chat_id, message_id, status=p.status, reason=p.reason
            )
        if len(pending) > MAX_CARDS_SHOWN:
            await self._say(chat, more_pending(MAX_CARDS_SHOWN, len(pending)))

    async def _full_diff(self, proposal_id: int, message: TgMessage) -> None:
        services = self.channel.services
        try:
            p = await services.review.get(proposal_id)
        except ProposalNotFound:
            return
        diff = await full_diff(p, services.review, services.store)
        await self.cards.send_diff(Target(message.chat.id), p, diff)

    async def _show(self, proposal_id: int, message: TgMessage) -> None:
        services = self.channel.services
        card = await build_card(
            await services.review.get(proposal_id), services.review, services.store
        )
        try:
            await self.cards.edit(message.chat.id, message.message_id, card)
        except ChannelError as exc:
            log.info("could not update an older card copy: %s", exc)

    async def _ask_reason(self, proposal_id: int, message: TgMessage, user: User) -> None:
        p = await self.channel.services.review.get(proposal_id)
        prompt = await self.channel.sender.send(
            Target(message.chat.id),
            Part.of_text(ASK_REASON.format(id=p.id, slug=p.slug)),
            markup=ForceReply(selective=True, input_field_placeholder="Reason (optional)"),
        )
        await ask_reason(
            self.channel.services,
            self.channel.name,
            str(message.chat.id),
            str(user.id),
            p.id,
            prompt_message_id=str(prompt.message_id),
        )

    async def _say(self, chat: ChatRef, text: str, *, reply_to: int | None = None) -> None:
        for n, chunk in enumerate(split_text(text, MAX_TEXT, utf16_len)):
            await self.channel.sender.send(
                Target.of(chat), Part.of_text(chunk), reply_to=reply_to if n == 0 else None
            )

    async def _ack(self, query: CallbackQuery, text: str) -> None:
        """answerCallbackQuery (at most 200 characters); a late answer is not an error."""
        try:
            await self.channel.sender.call("answerCallbackQuery", lambda: query.answer(text[:200]))
        except ChannelError as exc:
            log.info("could not acknowledge a card button: %s", exc)
