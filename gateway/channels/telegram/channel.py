"""The Telegram channel: webhook or polling in, decoded for the conversation layer, replies out.

python-telegram-bot provides the Bot API client and types; its Application is built with
`updater(None)` because updates come from our own server (or our own polling loop) and go
through the durable inbox: the webhook stores them, the inbox worker calls `process`.
Updates are dispatched here rather than by PTB's `process_update`, which would swallow a
handler's failure instead of letting the worker retry it.

Ordering: messages are keyed by chat, so one chat is answered in order; button presses are
keyed by the message they belong to, so they never wait behind an answer being written.
"""

from __future__ import annotations

import json
import logging
from typing import Any, ClassVar

from aiohttp import web
from telegram import Bot, CallbackQuery
from telegram import Message as TgMessage
from telegram.constants import ChatType
from telegram.error import TelegramError
from telegram.ext import Application

from gateway.channels.api import (
    KNOWN_COMMANDS,
    READABLE,
    STALE,
    Audience,
    CardSigner,
    Channel,
    ChannelError,
    ChatRef,
    Handler,
    InboxItem,
    Message,
    Ports,
    Press,
    Profile,
    Responder,
    Settings,
)
from gateway.channels.telegram.cards import TelegramCards
from gateway.channels.telegram.dialect import TELEGRAM
from gateway.channels.telegram.files import remote_of
from gateway.channels.telegram.incoming import Incoming, Person, read_message
from gateway.channels.telegram.polling import Poller
from gateway.channels.telegram.responder import TelegramResponder
from gateway.channels.telegram.salvage import query_id, raw_message, read_press
from gateway.channels.telegram.send import Sender, SendPolicy, Undeliverable, bot_request
from gateway.channels.telegram.settings import TelegramSettings
from gateway.channels.telegram.spec import SPEC
from gateway.channels.telegram.updates import (
    TelegramWebhook,
    addressed,
    command_of,
    media_of,
    without_mention,
)

log = logging.getLogger(__name__)


def file_base_url(api_base_url: str) -> str:
    """Where the Bot API serves downloads: its base with `/bot` as `/file/bot`."""
    head, sep, _ = api_base_url.rpartition("/bot")
    return f"{head}/file/bot" if sep else f"{api_base_url.rstrip('/')}/file/bot"


class TelegramChannel(Channel):
    """Telegram through python-telegram-bot, fed by the webhook route or by polling."""

    name: ClassVar[str] = SPEC.name

    def __init__(
        self,
        settings: Settings,
        *,
        private_interval: float = 1.0,
        group_per_minute: float = 20,
        max_retries: int = 3,
        typing_interval: float = 4.0,
        typing_delay: float = 1.0,
        poll_timeout: float = 30.0,
        draft_interval: float = 1.0,
        draft_keepalive: float = 20.0,
        edit_interval: float = 3.0,
    ) -> None:
        section = self.section = settings.section(TelegramSettings)
        if section.telegram_bot_token is None:
            raise ChannelError("Telegram needs TELEGRAM_BOT_TOKEN")
        self.settings = settings
        self.token = section.telegram_bot_token.get_secret_value()
        self.webhook = TelegramWebhook(section.telegram_webhook_secret)
        self.policy = SendPolicy(
            private_interval=private_interval,
            group_per_minute=group_per_minute,
            overall_per_second=section.telegram_max_messages_per_second,
            max_retries=max_retries,
            typing_interval=typing_interval,
            typing_delay=typing_delay,
            draft_interval=draft_interval,
            draft_keepalive=draft_keepalive,
            edit_interval=edit_interval,
        )
        self.poll_timeout = poll_timeout
        self.mode = "polling" if section.telegram_polling else "webhook"
        self.profile = Profile(
            channel=self.name,
            dialect=TELEGRAM,
            audience=Audience.of(section.telegram_allowed_user_ids, section.telegram_admin_ids),
            signer=CardSigner(self.token),
            # A reason is a reply to the prompt, so a Telegram card has no Skip.
            card_actions=frozenset(("approve", "reject", "diff")),
            capabilities=SPEC.capabilities,
        )
        self.session: TelegramSession | None = None
        """The running bot, between `start` and `stop`."""

    def routes(self) -> list[web.RouteDef]:
        return [self.webhook.route]

    async def start(self, ports: Ports) -> Handler:
        """Build the PTB application (getMe); in polling mode, start polling."""
        app = (
            Application.builder()
            .token(self.token)
            .base_url(self.section.telegram_api_base_url)
            .base_file_url(file_base_url(self.section.telegram_api_base_url))
            .request(bot_request())
            .updater(None)
            .job_queue(None)
            .build()
        )
        try:
            await app.initialize()
        except TelegramError as exc:
            text = exc.message.replace(self.token, "[redacted]")
            raise ChannelError(f"Telegram bot could not start: {text}") from exc
        session = self.session = TelegramSession(self, app, ports)
        # The webhook and the command menu are registered by `skillgate set-webhook`, once:
        # Telegram rate-limits setWebhook, so a restart must not repeat it.
        if self.section.telegram_polling:
            await session.start_polling()
        log.info("telegram: @%s ready (%s)", app.bot.username, self.mode)
        return session.process

    async def stop(self) -> None:
        """Stop polling and close the HTTP clients."""
        session, self.session = self.session, None
        if session is not None:
            await session.close()

    def health(self) -> dict[str, Any]:
        bot = self.session.bot.username if self.session is not None else None
        return {"configured": True, "mode": self.mode, "bot": bot}

    def card_transport(self) -> TelegramCards | None:
        return self.session.cards if self.session is not None else None

    def task_responder(self, chat: ChatRef, ref: str) -> Responder | None:
        """Sends into `chat` with nothing to reply to (an agent task's answer)."""
        session = self.session
        if session is None or chat.user_id is None or not chat.user_id.lstrip("-").isdigit():
            return None
        return TelegramResponder(
            chat,
            session.sender,
            session.cards,
            session.ports.deliveries,
            user=Person(int(chat.user_id)),
        )


class TelegramSession:
    """A started bot: decodes stored updates for the conversation layer, polls if asked."""

    def __init__(
        self,
        channel: TelegramChannel,
        app: Application[Any, Any, Any, Any, Any, Any],
        ports: Ports,
    ) -> None:
        self.app = app
        self.bot: Bot = app.bot
        self.sender = Sender(app.bot, channel.policy)
        self.cards = TelegramCards(
            self.sender, channel.profile.signer, channel.section.telegram_admin_ids
        )
        self.ports = ports
        self.conversation = ports.conversation
        self.streaming = channel.section.telegram_streaming
        self.poller = Poller(self.sender, ports.intake, channel.poll_timeout)

    async def start_polling(self) -> None:
        await self.poller.start()

    async def close(self) -> None:
        await self.poller.stop()
        await self.app.shutdown()

    async def process(self, item: InboxItem) -> None:
        """Handle one stored update: a button press or a message (an edit too)."""
        raw = json.loads(item.payload)
        try:
            if raw.get("callback_query") is not None:
                await self._press(raw, item)
                return
            found = raw_message(raw)
            if found is None:
                return  # an update the gateway does not handle (a member change): no loss
            key, value = found
            message = read_message(value)
            if message is None:
                self.conversation.unreadable(item.update_id, "a message without its id or chat")
                return
            await self._on_message(message, value, item, edited=key == "edited_message")
        except Undeliverable as exc:
            log.warning("%s; dropping update %s", exc, item.update_id)

    async def _press(self, raw: dict[str, Any], item: InboxItem) -> None:
        query, problem = read_press(raw, self.bot)
        if query is None:
            self.conversation.unreadable(item.update_id, problem)
            await self._answer_unreadable(raw)
        elif not item.given_up:  # a press given up on has nobody to tell: it is set aside
            await self._on_press(query, item)

    async def _answer_unreadable(self, raw: dict[str, Any]) -> None:
        """A press nobody can read still gets its answer, or the button keeps spinning."""
        query = query_id(raw)
        if query is None:
            return
        sender = raw.get("callback_query", {}).get("from", {})
        tag = sender.get("language_code") if isinstance(sender, dict) else None
        text = self.conversation.languages.pick(tag if isinstance(tag, str) else None)(STALE)
        try:
            await self.sender.call(
                "answerCallbackQuery", lambda: self.bot.answer_callback_query(query, text)
            )
        except ChannelError as exc:
            log.warning("could not answer an unreadable button press: %s", exc)

    async def _on_press(self, query: CallbackQuery, item: InboxItem) -> None:
        message = query.message
        user = Person.of(query.from_user)
        if not isinstance(message, TgMessage):  # too old for Telegram to say which
            chat = ChatRef(channel=TelegramChannel.name, chat_id=str(user.id))
            out = self._responder(item, chat, user=user, query=query)
            await self.conversation.on_stale_press(chat, out)
            return
        is_group = message.chat.type != ChatType.PRIVATE
        topic = message.message_thread_id if message.is_topic_message else None
        chat = ChatRef(
            channel=TelegramChannel.name,
            chat_id=str(message.chat.id),
            user_id=str(user.id),
            thread_id=str(topic) if topic else None,
            is_group=is_group,
        )
        out = self._responder(item, chat, user=user, message_id=message.message_id, query=query)
        press = Press(
            chat=chat, data=query.data or "", message_id=str(message.message_id), inbox_id=item.id
        )
        await self.conversation.on_press(press, out)

    async def _on_message(
        self, message: Incoming, raw: dict[str, Any], item: InboxItem, *, edited: bool = False
    ) -> None:
        user = message.sender
        if user is None and message.chat_type == ChatType.PRIVATE:
            # Some sources leave `from` out; in a 1:1 chat the chat is the user.
            user = Person(id=message.chat_id, first_name=message.chat_name)
        if user is None or user.is_bot or message.chat_type == ChatType.CHANNEL:
            return
        is_group = message.is_group
        topic = message.topic
        ref = ChatRef(
            channel=TelegramChannel.name,
            chat_id=str(message.chat_id),
            user_id=str(user.id),
            thread_id=str(topic) if topic else None,
            is_group=is_group,
        )
        username = self.bot.username
        text = message.text
        command = command_of(message, username) if text is not None else None
        is_for_us = not is_group or addressed(message, self.bot.id, username)
        if command is not None and command not in KNOWN_COMMANDS and is_group:
            # A bare unknown command in a group may be another bot's.
            is_for_us = is_for_us and "@" in (text or "").split()[0]
        words = text if text is not None else message.caption
        media, details = media_of(raw)
        attachment = remote_of(raw, media, self.bot)
        if media is None and words is not None and command is None:
            # Words replying to a voice note, photo or document ask about it: read that one.
            quoted = raw.get("reply_to_message")
            if isinstance(quoted, dict) and _from_a_user(quoted, self.bot.id):
                found = media_of(quoted)[0]
                if found is not None and found in READABLE:
                    media, attachment = found, remote_of(quoted, found, self.bot)
        replied = message.reply_to
        decoded = Message(
            chat=ref,
            text=without_mention(words, username) if words is not None else None,
            media=media,
            details=details,
            album=message.album,
            attachment=attachment,
            edited=edited,
            message_id=str(message.message_id),
            user_name=user.first_name,
            command=command,
            addressed=is_for_us,
            replying_to=str(replied.message_id) if replied is not None else None,
            inbox_id=item.id,
            given_up=item.given_up,
        )
        out = self._responder(item, ref, user=user, message_id=message.message_id)
        await self.conversation.on_message(decoded, out)

    def _responder(
        self,
        item: InboxItem,
        chat: ChatRef,
        *,
        user: Person,
        message_id: int | None = None,
        query: CallbackQuery | None = None,
    ) -> Responder:
        """Replies for the update `item`, fenced by its inbox claim."""
        out = TelegramResponder(
            chat,
            self.sender,
            self.cards,
            self.ports.deliveries,
            user=user,
            message_id=message_id,
            query=query,
            streaming=self.streaming,
        )
        return self.ports.fenced(out, item)


def _from_a_user(raw: dict[str, Any], bot_id: int) -> bool:
    """A raw message someone other than this bot sent (the bot's own files are not read)."""
    sender = raw.get("from")
    return not (isinstance(sender, dict) and sender.get("id") == bot_id)
