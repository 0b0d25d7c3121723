"""How the conversation layer's replies look in LINE, for one event being handled.

Everything goes to the chat the event came from, by the event's reply token first
(see `LineOutbox`). LINE has no answer to a postback, so a press that needs one
gets a notice, and a mere courtesy ("thanks for the feedback") is left out. A
question (what went wrong, why reject) is a notice; the user's next text answers
it, or Skip after a rejection.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence

from gateway.channels.api import (
    CUT_NOTE,
    ENGLISH,
    MAX_CARDS_SHOWN,
    N_,
    Button,
    Card,
    ChannelError,
    ChatRef,
    Proposal,
    Reply,
    Texts,
    cancel_and_wait,
    split_text,
    utf16_len,
)
from gateway.channels.line.admin_cards import FlexCards
from gateway.channels.line.client import (
    MAX_MESSAGES_PER_CALL,
    LineClient,
    LineMessage,
    audio_message,
    image_message,
    text_messages,
)
from gateway.channels.line.delivery import EventContext, LineOutbox
from gateway.channels.line.dialect import ASK_IN_GROUP, ASK_WHAT_WENT_WRONG
from gateway.channels.line.format import MAX_TEXT_UTF16, line_parts

log = logging.getLogger(__name__)

ASK_REASON = N_(
    "Why reject proposal #{id} ({slug})? Send the reason in your next message, or tap Skip."
)
ASK_REASON_IN_GROUP = N_(
    "Why reject proposal #{id} ({slug})? Mention me in your next message with the reason,"
    " or tap Skip."
)
SKIP = N_("Skip")
DIFF_TOO_LONG = N_(
    "… the rest of the diff is too long for chat: skillgate proposals show {id}"
    " (in a terminal) or the web console shows all of it."
)
NO_DIFFERENCES = N_("(no differences)")


def full_diff_texts(proposal_id: int, diff: str, texts: Texts = ENGLISH) -> list[str]:
    """The diff as at most five text messages (one push); a longer one ends with a pointer."""
    parts = split_text(diff, MAX_TEXT_UTF16, utf16_len) or [texts(NO_DIFFERENCES)]
    if len(parts) > MAX_MESSAGES_PER_CALL:
        parts = [*parts[: MAX_MESSAGES_PER_CALL - 1], texts(DIFF_TOO_LONG, id=proposal_id)]
    return parts


class LineResponder:
    """Replies in the chat of one LINE event, with that event's reply token."""

    def __init__(
        self,
        chat: ChatRef,
        event: EventContext,
        outbox: LineOutbox,
        client: LineClient,
        bubbles: FlexCards,
        *,
        loading_seconds: int,
        loading_renew_seconds: float | None = None,
    ) -> None:
        self.chat = chat
        self.event = event
        self.outbox = outbox
        self.client = client
        self.bubbles = bubbles
        self.loading_seconds = loading_seconds
        self.loading_renew_seconds = loading_renew_seconds or max(5.0, loading_seconds - 10.0)
        self.texts: Texts = ENGLISH
        self._name: str | None = None
        """The display name, when the language lookup brought it along."""

    @property
    def language_tag(self) -> str | None:
        return None  # LINE's events do not say; the profile does

    async def look_up_language(self) -> str | None:
        if self.chat.user_id is None:
            return None
        profile = await self.client.profile(self.chat.user_id)
        self._name = profile.display_name
        return profile.language

    async def notice(
        self, text: str, *, buttons: Sequence[Button] = (), quote: bool = False
    ) -> None:
        await self._send(Reply(text=text, kind="notice", buttons=list(buttons)))

    async def acknowledge(self, text: str, *, courtesy: bool = False) -> None:
        if not courtesy:
            await self.notice(text)

    async def close_buttons(self) -> None:
        """Quick replies go by themselves once one is tapped; a sent message cannot change."""

    @contextlib.asynccontextmanager
    async def working(self) -> AsyncIterator[None]:
        """The loading animation, in 1:1 chats only (LINE shows it nowhere else).

        LINE has no partial messages, so nothing is previewed; the animation (at most 60 s
        a call) is renewed before it runs out for as long as the answer is being written.
        """
        user_id = self.chat.user_id
        if self.chat.is_group or user_id is None:
            yield
            return
        await self._show_loading(user_id)
        task = asyncio.create_task(self._keep_loading(user_id), name=f"loading:{user_id}")
        try:
            yield
        finally:
            await cancel_and_wait(task)

    async def _keep_loading(self, user_id: str) -> None:
        while True:
            await asyncio.sleep(self.loading_renew_seconds)
            await self._show_loading(user_id)

    async def _show_loading(self, user_id: str) -> None:
        try:
            await self.client.show_loading(user_id, self.loading_seconds)
        except ChannelError as exc:
            log.warning("LINE loading animation failed: %s", exc)

    async def deliver(self, reply: Reply) -> list[str]:
        return await self._send(reply)

    async def _send(self, reply: Reply) -> list[str]:
        """Plain-text parts of at most 5000 UTF-16 units; buttons as quick replies on the last."""
        if reply.message_id is not None:
            ref = f"answer:{reply.message_id}"
        else:
            ref = self.event.next_ref()
        parts = line_parts(reply.text, note=self.texts(CUT_NOTE)) or [
            reply.text.strip()[:MAX_TEXT_UTF16] or "…"
        ]
        answer = reply.message_id
        # A notice, or an answer stored by this very attempt, tries the reply token first.
        fresh = not reply.resumed
        voice = reply.voice
        pictures = [image_message(p.url) for p in reply.pictures if p.url is not None]
        if pictures or (voice is not None and voice.url is not None):
            # Pictures first, then the text, then the audio, each fetched by its signed link;
            # the buttons on the last message.
            messages: list[LineMessage] = [*pictures]
            if voice is not None and voice.url is not None:
                messages += [
                    *text_messages(parts),
                    audio_message(voice.url, voice.seconds, reply.buttons),
                ]
            else:
                messages += text_messages(parts, reply.buttons)
            return await self.outbox.deliver_messages(
                self.chat.chat_id, messages, ref, self.event, answer=answer, fresh=fresh
            )
        return await self.outbox.deliver(
            self.chat.chat_id, parts, reply.buttons, ref, self.event, answer=answer, fresh=fresh
        )

    async def show_rating(self, answer_id: int, rating: int) -> None:
        return None  # LINE cannot edit a sent message

    async def ask_comment(self, answer_id: int) -> str | None:
        await self.notice(self.texts(ASK_IN_GROUP if self.chat.is_group else ASK_WHAT_WENT_WRONG))
        return None

    async def ask_reason(self, proposal: Proposal, decided: str) -> str | None:
        action, _, value = self.bubbles.signer.data("skip", proposal.id).partition(":")
        skip = Button(label=self.texts(SKIP), action=action, value=value)
        ask = ASK_REASON_IN_GROUP if self.chat.is_group else ASK_REASON
        text = f"{decided}\n{self.texts(ask, id=proposal.id, slug=proposal.slug)}"
        await self.notice(text, buttons=[skip])
        return None

    async def reviewer_name(self) -> str | None:
        if self.chat.user_id is None:
            return None
        return self._name or await self.client.display_name(self.chat.user_id)

    async def is_chat_admin(self) -> bool:
        return False  # LINE names no group admins to bots: Skillgate's own admins decide

    def cards_per_listing(self, pending: int) -> int:
        # One batch of five messages: with more waiting, the last one says so.
        return MAX_CARDS_SHOWN if pending <= MAX_CARDS_SHOWN else MAX_CARDS_SHOWN - 1

    async def show_cards(self, cards: Sequence[Card], more: str | None) -> list[str | None]:
        messages = [await self.bubbles.message(card) for card in cards]
        if more is not None:
            messages += text_messages([more])
        ids = await self.outbox.deliver_messages(
            self.chat.chat_id, messages, self.event.next_ref(), self.event
        )
        return [message_id for message_id in ids[: len(cards)]]

    async def show_card(self, card: Card) -> None:
        return None  # LINE cannot edit a sent message; the decision was said already

    async def send_diff(self, proposal: Proposal, diff: str) -> None:
        texts = full_diff_texts(proposal.id, diff, self.texts)
        await self.outbox.deliver_messages(
            self.chat.chat_id, text_messages(texts), self.event.next_ref(), self.event
        )
