"""Admins reviewing in LINE: postbacks, the reason after Reject, /proposals, /skills, /synthesize.

Admin rights come first (LINE_ADMIN_IDS), then the postback's signature. After
Reject the rejection is recorded at once and the bot asks for a reason: the
admin's next text within five minutes becomes it, or Skip closes the question.
The "what went wrong?" question after 👎 is a different purpose of the same
store, so neither takes the other's answer.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from gateway.channels.line.client import MAX_MESSAGES_PER_CALL, text_messages
from gateway.channels.line.format import MAX_TEXT_UTF16
from gateway.channels.text import split_text, utf16_len
from gateway.conversation.review import (
    ADMIN_COMMAND_NAMES,
    INVALID_BUTTON,
    MAX_CARDS_SHOWN,
    NO_PENDING,
    NO_REASON,
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
from gateway.core.models import Button, ChatRef
from gateway.errors import ProposalNotFound
from gateway.skills.cards import build_card, full_diff

if TYPE_CHECKING:
    from gateway.channels.line.cards import LineCards
    from gateway.channels.line.channel import LineChannel

log = logging.getLogger(__name__)

REASON_MINUTES = 5
ASK_REASON = (
    "Why reject proposal #{id} ({slug})? Send the reason in your next message, or tap Skip."
)
DIFF_TOO_LONG = (
    "… the rest of the diff is too long for chat: skillgate proposals show {id}"
    " (in a terminal) or the web console shows all of it."
)


def full_diff_texts(proposal_id: int, diff: str) -> list[str]:
    """The diff as at most five text messages (one push); a longer one ends with a pointer."""
    parts = split_text(diff, MAX_TEXT_UTF16, utf16_len) or ["(no differences)"]
    if len(parts) > MAX_MESSAGES_PER_CALL:
        parts = [*parts[: MAX_MESSAGES_PER_CALL - 1], DIFF_TOO_LONG.format(id=proposal_id)]
    return parts


class LineReview:
    """Card postbacks, rejection reasons and review commands for the LINE channel."""

    def __init__(self, channel: LineChannel, cards: LineCards) -> None:
        self.channel = channel
        self.cards = cards

    async def on_postback(self, data: str, chat: ChatRef) -> None:
        """Approve, Reject, Full diff or Skip on a card."""
        user = chat.user_id
        if not self.cards.is_admin(user):
            log.warning(
                "LINE user %s pressed a proposal button but is not an admin; nothing changed", user
            )
            await self.channel.say(chat, NOT_ALLOWED)
            return
        assert user is not None
        verified = self.cards.signer.verify(data)
        if verified is None:
            log.warning("refused card postback data %r from LINE user %s", data[:80], user)
            await self.channel.say(chat, INVALID_BUTTON)
            return
        action, proposal_id = verified
        if action == "diff":
            await self._full_diff(proposal_id, chat)
            return
        if action == "skip":
            question = await pending_reason(
                self.channel.services, self.channel.name, chat.chat_id, user
            )
            if question is not None and question.ref == str(proposal_id):
                await store_reason(self.channel.services, question, None)
            await self.channel.say(chat, NO_REASON)
            return
        decider = f"line:{user}"
        name = await self.channel.client.display_name(user)
        if name:
            await self.channel.services.store.set_reviewer_name(decider, name)
        result = await decide(self.channel.services, action, proposal_id, decider)
        if not result.rejected_now:
            await self.channel.say(chat, result.text)
            return
        p = result.decision.proposal if result.decision else None
        assert p is not None
        await ask_reason(
            self.channel.services,
            self.channel.name,
            chat.chat_id,
            user,
            p.id,
            minutes=REASON_MINUTES,
        )
        action_name, _, value = self.cards.signer.data("skip", p.id).partition(":")
        skip = Button(label="Skip", action=action_name, value=value)
        text = f"{result.text}\n{ASK_REASON.format(id=p.id, slug=p.slug)}"
        await self.channel.say(chat, text, buttons=[skip])

    async def take_reason(self, chat: ChatRef, text: str) -> bool:
        """Store the admin's text as the reason asked for; False when no reason was asked."""
        if not self.cards.is_admin(chat.user_id):
            return False
        assert chat.user_id is not None
        services = self.channel.services
        question = await pending_reason(services, self.channel.name, chat.chat_id, chat.user_id)
        if question is None:
            return False
        await store_reason(services, question, text)
        await self.channel.say(chat, REASON_STORED)
        return True

    async def on_command(self, command: str, chat: ChatRef) -> None:
        """/proposals, /skills or /synthesize."""
        if not self.cards.is_admin(chat.user_id):
            log.warning("LINE user %s tried %s: not an admin", chat.user_id, command)
            await self.channel.say(chat, NOT_ALLOWED)
            return
        if chat.is_group:
            await self.channel.say(chat, PRIVATE_ONLY)
            return
        services = self.channel.services
        name = command.lstrip("/")
        assert name in ADMIN_COMMAND_NAMES
        if name == "proposals":
            await self._proposals(chat)
        elif name == "skills":
            await self.channel.say(chat, await skills_text(services))
        else:
            # One reply token: the result is what the admin waits for (pushed if it took long).
            await self.channel.say(chat, await synthesize_text(services))

    async def _proposals(self, chat: ChatRef) -> None:
        services = self.channel.services
        pending = await services.store.pending_proposals()
        if not pending:
            await self.channel.say(chat, NO_PENDING)
            return
        shown = pending[: MAX_CARDS_SHOWN - 1] if len(pending) > MAX_CARDS_SHOWN else pending
        cards = [await build_card(p, services.review, services.store) for p in shown]
        messages = [self.cards.message(card) for card in cards]
        if len(pending) > len(shown):
            messages += text_messages([more_pending(len(shown), len(pending))])
        ids = await self.channel.deliver(chat, messages)
        for n, p in enumerate(shown):
            # Cards that failed to arrive earlier count as delivered now; decisions reach them.
            await services.store.card_delivered(
                p.id,
                self.channel.name,
                chat.chat_id,
                ids[n] if n < len(ids) else None,
                status=p.status,
                reason=p.reason,
            )

    async def _full_diff(self, proposal_id: int, chat: ChatRef) -> None:
        review = self.channel.services.review
        try:
            p = await review.get(proposal_id)
        except ProposalNotFound:
            await self.channel.say(chat, "This proposal no longer exists.")
            return
        diff = await full_diff(p, review, self.channel.services.store)
        texts = full_diff_texts(p.id, diff)
        await self.channel.deliver(chat, text_messages(texts))
