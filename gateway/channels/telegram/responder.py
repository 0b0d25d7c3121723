"""How the conversation layer's replies look in Telegram, for one update being handled.

Notices in a group reply to the message they answer; a press is acknowledged with
answerCallbackQuery (at most 200 characters; a late answer after a retry is no error).
A question (what went wrong after 👎, why a proposal was rejected) is a ForceReply
prompt, so only a reply to it is its answer; in a group a selective ForceReply reaches
only the users mentioned in the prompt.

An answer being written is shown per TELEGRAM_STREAMING (see `stream`): as a draft in a
private chat, or in a group (with `edit`) as one message edited in place, which the final
answer then becomes.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from html import escape

from telegram import CallbackQuery, ForceReply
from telegram.constants import ChatMemberStatus
from telegram.helpers import mention_html

from gateway.channels.api import (
    CUT_NOTE,
    ENGLISH,
    N_,
    AnswerLog,
    Button,
    Card,
    ChannelError,
    ChatRef,
    PartialText,
    Proposal,
    RateLimited,
    Reply,
    Texts,
    rating_buttons,
    split_text,
    utf16_len,
)
from gateway.channels.telegram.buttons import Keyboard, keyboard
from gateway.channels.telegram.cards import TelegramCards
from gateway.channels.telegram.format import MAX_TEXT, Part, render_parts
from gateway.channels.telegram.incoming import Person
from gateway.channels.telegram.send import NotModified, Sender, Target, Undeliverable
from gateway.channels.telegram.stream import Streaming, preview_for, preview_ref, stored_preview

log = logging.getLogger(__name__)

ASK_COMMENT = N_("What went wrong? Reply to this message, or ignore it.")
ASK_COMMENT_IN_GROUP = N_("{mention}, what went wrong? Reply to this message, or ignore it.")
"""In a group the prompt names the user, so that the selective ForceReply reaches them."""
COMMENT_PLACEHOLDER = N_("What went wrong?")
ASK_REASON = N_(
    "Why reject proposal #{id} ({slug})? Reply to this message with the reason,"
    " or ignore it to leave the rejection without one."
)
REASON_PLACEHOLDER = N_("Reason (optional)")
SENDING_DIFF = N_("Sending the full diff…")
MAX_CARDS_SHOWN = 5
MAX_PLACEHOLDER = 64
"""Telegram's limit on a ForceReply's input field placeholder, in characters."""


def readable(user: Person) -> str:
    """How a Telegram user is shown on cards: "Alice Smith (@alice)"."""
    return user.full_name + (f" (@{user.username})" if user.username else "")


class TelegramResponder:
    """Replies in the chat of one message or button press."""

    def __init__(
        self,
        chat: ChatRef,
        sender: Sender,
        cards: TelegramCards,
        parts_log: AnswerLog,
        *,
        user: Person,
        message_id: int | None = None,
        query: CallbackQuery | None = None,
        streaming: Streaming = "off",
    ) -> None:
        self.chat = chat
        self.sender = sender
        self.cards = cards
        self.parts_log = parts_log
        self.user = user
        self.message_id = message_id
        """The message handled, or the one whose button was pressed."""
        self.query = query
        self.target = Target.of(chat)
        self.streaming = streaming
        self._shown: int | None = None
        """The message that showed this answer as it was written (edit mode), if any."""
        self.texts: Texts = ENGLISH

    @property
    def language_tag(self) -> str | None:
        return self.user.language_code

    async def look_up_language(self) -> str | None:
        return None  # the Bot API tells it only with the user's updates

    @property
    def _reply_to(self) -> int | None:
        """In a group, answers reply to the message they answer."""
        if self.query is None and self.chat.is_group:
            return self.message_id
        return None

    async def notice(
        self, text: str, *, buttons: Sequence[Button] = (), quote: bool = False
    ) -> None:
        reply_to = self.message_id if quote and self.message_id is not None else self._reply_to
        markup = keyboard(list(buttons)) if buttons else None
        chunks = split_text(text, MAX_TEXT, utf16_len) or [text]
        for n, chunk in enumerate(chunks):
            last = n == len(chunks) - 1
            await self.sender.send(
                self.target,
                Part.of_text(chunk),
                markup=markup if last else None,
                reply_to=reply_to if n == 0 else None,
            )

    async def acknowledge(self, text: str, *, courtesy: bool = False) -> None:
        if self.query is None:
            await self.notice(text)
            return
        query = self.query
        try:
            await self.sender.call("answerCallbackQuery", lambda: query.answer(text[:200]))
        except ChannelError as exc:
            log.info("could not acknowledge a button press: %s", exc)

    @contextlib.asynccontextmanager
    async def working(self) -> AsyncIterator[PartialText | None]:
        """ "typing…", and the answer as it grows where TELEGRAM_STREAMING shows it here."""
        async with self.sender.typing(self.target) as stop_typing:
            stream = preview_for(
                self.streaming,
                self.sender,
                self.target,
                self.message_id,
                self._reply_to,
                self.parts_log,
            )
            if stream is None:
                yield None
                return
            async with stream.previewing(stop_typing) as partial:
                yield partial
            self._shown = stream.message_id

    async def deliver(self, reply: Reply) -> list[str]:
        """The answer in parts, the last one with its buttons; continues after a failure.
        Pictures go before the text, as photos; a spoken answer after it, as a voice message.
        The text carries the buttons, so a crash or a refusal between the text and its voice
        (a user whose privacy settings forbid voice messages) never costs the rating."""
        parts = render_parts(reply.text, note=self.texts(CUT_NOTE))
        ids = list(reply.delivered_ids)
        voice = reply.voice
        if len(ids) >= len(parts) + (voice is not None):
            return ids
        markup = keyboard(reply.buttons) if reply.buttons else None
        if not ids:
            # Pictures made for the answer go first, each a photo with its prompt as caption
            # (not counted among the answer's parts: a retry sends the text, not them again).
            for picture in reply.pictures:
                await self.sender.photo(self.target, picture.data, caption=picture.prompt)
        ids = await self._parts(reply, parts, ids, markup)
        if voice is None:
            return ids
        try:
            sent = await self.sender.voice(self.target, voice.audio, voice.seconds)
        except (RateLimited, Undeliverable):
            raise  # waited out, or the chat is gone: as for any part
        except ChannelError as exc:
            log.warning("the spoken answer was not sent (its text was): %s", exc)
            return ids
        ids.append(str(sent))
        if reply.message_id is not None:
            await self.parts_log.settle_platform_ids(reply.message_id, ids)
        return ids

    async def _parts(
        self, reply: Reply, parts: list[Part], ids: list[str], markup: Keyboard | None
    ) -> list[str]:
        """The text parts not sent yet, `markup` on the last one."""
        if not ids and self._shown is None and self._edits_in_place():
            # A retry of an answer already written: its streamed message may be waiting.
            assert self.message_id is not None
            ref = preview_ref(self.target, self.message_id)
            self._shown = await stored_preview(self.parts_log, ref)
        if not ids and self._shown is not None:
            # The message that grew with the answer becomes its first part.
            first = await self._finish_shown(self._shown, parts[0], markup, len(parts) == 1)
            if first is not None:
                ids.append(first)
                await self._record(reply, ids, last=len(parts) == 1)
        for index in range(len(ids), len(parts)):
            last = index == len(parts) - 1
            sent = await self.sender.send(
                self.target,
                parts[index],
                markup=markup if last else None,
                reply_to=self._reply_to if index == 0 else None,
            )
            ids.append(str(sent))
            # Each part is recorded as it goes out, so a retry after a failure (a 429 that
            # outlasted the retries, a network error) continues with the next part.
            await self._record(reply, ids, last=last)
        return ids

    async def _record(self, reply: Reply, ids: list[str], *, last: bool) -> None:
        """Where the answer's parts went so far; after the last message of the answer (no
        voice to follow), with the update's done (`AnswerLog.settle_platform_ids`)."""
        if reply.message_id is None:
            return
        if last and reply.voice is None:
            await self.parts_log.settle_platform_ids(reply.message_id, ids)
        else:
            await self.parts_log.set_platform_ids(reply.message_id, ids)

    def _edits_in_place(self) -> bool:
        return self.streaming == "edit" and self.chat.is_group and self._reply_to is not None

    async def _finish_shown(
        self, message_id: int, part: Part, markup: Keyboard | None, last: bool
    ) -> str | None:
        """Edit the streamed message into the answer's first part; None if it is gone."""
        try:
            await self.sender.edit(
                self.target.chat_id, message_id, part, markup=markup if last else None
            )
        except NotModified:
            pass
        except ChannelError as exc:
            log.info("the streamed message could not become the answer, sending it: %s", exc)
            return None
        return str(message_id)

    async def close_buttons(self) -> None:
        message_id = self.message_id
        if self.query is None or message_id is None:
            return
        try:
            await self.sender.call(
                "editMessageReplyMarkup",
                lambda: self.sender.bot.edit_message_reply_markup(
                    self.target.chat_id, message_id, reply_markup=None
                ),
            )
        except NotModified:
            pass  # gone already: a second press
        except ChannelError as exc:
            log.info("could not take the buttons off a decided question: %s", exc)

    async def show_rating(self, answer_id: int, rating: int) -> None:
        message_id = self.message_id
        if message_id is None:
            return
        markup = keyboard(rating_buttons(answer_id), f"{answer_id}:{rating:+d}")
        with contextlib.suppress(NotModified):  # a second tap on the same button
            await self.sender.call(
                "editMessageReplyMarkup",
                lambda: self.sender.bot.edit_message_reply_markup(
                    self.target.chat_id, message_id, reply_markup=markup.markup()
                ),
            )

    async def ask_comment(self, answer_id: int) -> str | None:
        texts = self.texts
        if self.chat.is_group:
            mention = mention_html(self.user.id, self.user.first_name)
            template = texts(ASK_COMMENT_IN_GROUP)
            html = escape(template, quote=False).format(mention=mention)
            part = Part(html, template.format(mention=self.user.first_name))
        else:
            part = Part.of_text(texts(ASK_COMMENT))
        placeholder = texts(COMMENT_PLACEHOLDER)[:MAX_PLACEHOLDER]
        prompt = await self.sender.send(
            self.target,
            part,
            markup=ForceReply(selective=True, input_field_placeholder=placeholder),
        )
        return str(prompt)

    async def ask_reason(self, proposal: Proposal, decided: str) -> str | None:
        await self.acknowledge(decided)
        prompt = await self.sender.send(
            Target(self.target.chat_id),
            Part.of_text(self.texts(ASK_REASON, id=proposal.id, slug=proposal.slug)),
            markup=ForceReply(
                selective=True,
                input_field_placeholder=self.texts(REASON_PLACEHOLDER)[:MAX_PLACEHOLDER],
            ),
        )
        return str(prompt)

    async def reviewer_name(self) -> str | None:
        return readable(self.user)

    async def is_chat_admin(self) -> bool:
        if not self.chat.is_group:
            return False
        try:
            member = await self.sender.call(
                "getChatMember",
                lambda: self.sender.bot.get_chat_member(int(self.chat.chat_id), self.user.id),
            )
        except ChannelError as exc:
            log.warning("could not ask Telegram who administers a group: %s", exc)
            return False
        return member.status in (ChatMemberStatus.OWNER, ChatMemberStatus.ADMINISTRATOR)

    def cards_per_listing(self, pending: int) -> int:
        return MAX_CARDS_SHOWN

    async def show_cards(self, cards: Sequence[Card], more: str | None) -> list[str | None]:
        ids = [await self.cards.send_card(self.chat.chat_id, card) for card in cards]
        if more is not None:
            await self.notice(more)
        return ids

    async def show_card(self, card: Card) -> None:
        if self.message_id is not None:
            await self.cards.edit(self.target.chat_id, self.message_id, card)

    async def send_diff(self, proposal: Proposal, diff: str) -> None:
        await self.acknowledge(self.texts(SENDING_DIFF))
        await self.cards.send_diff(Target(self.target.chat_id), proposal, diff, self.texts)
