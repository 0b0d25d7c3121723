"""The Telegram channel: webhook or polling in, ordered answers out, 👍/👎 feedback.

python-telegram-bot provides the Bot API client and types; its Application is built with
`updater(None)` because updates come from our own server (or our own polling loop) and go
through the durable inbox: `accept` stores them, the inbox worker calls `process`. Updates
are dispatched here rather than by PTB's `process_update`, which would swallow a handler's
failure instead of letting the worker retry it.

Ordering: messages are keyed by chat, so one chat is answered in order; button presses are
keyed by the message they belong to, so they never wait behind an answer being written.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
from typing import Any, ClassVar

from aiohttp import web
from telegram import Bot, Update, User
from telegram import Message as TgMessage
from telegram.constants import ChatType
from telegram.error import TelegramError
from telegram.ext import Application

from gateway.channels.base import Channel
from gateway.channels.telegram.cards import TelegramCards
from gateway.channels.telegram.feedback import FeedbackHandler, keyboard
from gateway.channels.telegram.format import Part, render_parts
from gateway.channels.telegram.review import TelegramReview
from gateway.channels.telegram.send import (
    Sender,
    SendPolicy,
    Target,
    Undeliverable,
    bot_request,
)
from gateway.channels.telegram.updates import (
    ALLOWED_UPDATES,
    COMMANDS,
    JSON,
    WEBHOOK_PATH,
    addressed,
    chat_key,
    command_of,
    read_update,
    without_mention,
)
from gateway.config import Settings
from gateway.conversation.review import ADMIN_COMMAND_NAMES, ADMIN_HELP
from gateway.core.models import ChatRef, IncomingMessage, Reply
from gateway.core.records import InboxItem
from gateway.errors import ChannelError, StoreError
from gateway.skills.card_buttons import is_card_data

log = logging.getLogger(__name__)

KNOWN = {name for name, _ in COMMANDS} | set(ADMIN_COMMAND_NAMES)
START = (
    "Hi {name}! I'm an AI assistant: ask me anything.\n"
    "Rate my answers with 👍 or 👎, that is how I get better. /help tells more."
)
HELP = (
    "Send me a message and I'll answer it.\n\n"
    "/new finishes this conversation and starts a fresh one\n"
    "/help shows this message\n\n"
    "Under each answer, 👍 or 👎 tells me how it went; after 👎 you can say what went wrong."
)
GROUP_HINT = (
    "\n\nIn a group I answer when you mention me, reply to one of my messages or use a command."
)
NEW = "Done: this conversation is finished. Your next message starts a fresh one."
REFUSAL = (
    "Sorry, this bot is private. If you should have access, ask its owner to add your"
    " Telegram user id: {user_id}"
)
TEXT_ONLY = "Sorry, I can only read text messages."
UNKNOWN = "I don't know /{command}. /help lists what I understand."


class TelegramChannel(Channel):
    """Telegram through python-telegram-bot, fed by the webhook route or by polling."""

    name: ClassVar[str] = "telegram"

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
    ) -> None:
        super().__init__(settings)
        self.policy = SendPolicy(
            private_interval=private_interval,
            group_per_minute=group_per_minute,
            overall_per_second=settings.telegram_max_messages_per_second,
            max_retries=max_retries,
            typing_interval=typing_interval,
            typing_delay=typing_delay,
        )
        self.poll_timeout = poll_timeout
        self.feedback = FeedbackHandler(self)
        self.cards = TelegramCards(self)
        self.review = TelegramReview(self, self.cards)
        self._app: Application[Any, Any, Any, Any, Any, Any] | None = None
        self._bot: Bot | None = None
        self._sender: Sender | None = None
        self._poller: asyncio.Task[None] | None = None

    @property
    def bot(self) -> Bot:
        if self._bot is None:
            raise RuntimeError("telegram channel used before it started")
        return self._bot

    @property
    def sender(self) -> Sender:
        if self._sender is None:
            raise RuntimeError("telegram channel used before it started")
        return self._sender

    @property
    def mode(self) -> str:
        return "polling" if self.settings.telegram_polling else "webhook"

    def routes(self) -> list[web.RouteDef]:
        return [web.post(WEBHOOK_PATH, self.webhook)]

    async def start(self) -> None:
        """Build the PTB application (getMe); in polling mode, start polling."""
        assert self.settings.telegram_bot_token is not None
        token = self.settings.telegram_bot_token.get_secret_value()
        app = (
            Application.builder()
            .token(token)
            .base_url(self.settings.telegram_api_base_url)
            .request(bot_request())
            .updater(None)
            .job_queue(None)
            .build()
        )
        try:
            await app.initialize()
        except TelegramError as exc:
            text = exc.message.replace(token, "[redacted]")
            raise ChannelError(f"Telegram bot could not start: {text}") from exc
        self._app, self._bot = app, app.bot
        self._sender = Sender(app.bot, self.policy)
        # The webhook and the command menu are registered by `skillgate set-webhook`, once:
        # Telegram rate-limits setWebhook, so a restart must not repeat it.
        if self.settings.telegram_polling:
            await self._best_effort("deleteWebhook", self._drop_webhook)
            self._poller = asyncio.create_task(self._poll(), name="telegram:polling")
        log.info("telegram: @%s ready (%s)", self.bot.username, self.mode)

    async def _drop_webhook(self) -> None:
        """getUpdates is refused while a webhook is set; remove one only if there is one."""
        if (await self.bot.get_webhook_info()).url:
            await self.bot.delete_webhook()

    async def stop(self) -> None:
        """Stop polling and close the HTTP clients."""
        if self._poller is not None:
            self._poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._poller
            self._poller = None
        if self._app is not None:
            await self._app.shutdown()
            self._app = None

    def health(self) -> dict[str, Any]:
        bot = self._bot.username if self._bot is not None else None
        return {"configured": True, "mode": self.mode, "bot": bot}

    def card_transport(self) -> TelegramCards:
        return self.cards

    def allowed(self, user_id: int) -> bool:
        """Everyone when TELEGRAM_ALLOWED_USER_IDS is empty; else those users and the admins."""
        allow = self.settings.telegram_allowed_user_ids
        return not allow or user_id in allow or user_id in self.settings.telegram_admin_ids

    # ---- in -------------------------------------------------------------------------------

    async def webhook(self, request: web.Request) -> web.Response:
        """POST /webhook/telegram: verify the secret, store the update, then answer 200."""
        expected = self.settings.telegram_webhook_secret
        got = request.headers.get("X-Telegram-Bot-Api-Secret-Token", "")
        if expected is None or not hmac.compare_digest(
            got.encode("utf-8", "surrogatepass"), expected.get_secret_value().encode()
        ):
            return web.json_response({"error": "missing or wrong secret token"}, status=401)
        if request.content_type != JSON:
            return web.json_response({"error": f"Content-Type must be {JSON}"}, status=415)
        update, status, problem = await read_update(request)
        if update is None:
            return web.json_response({"error": problem}, status=status)
        try:
            await self.accept(update)
        except StoreError:
            log.exception("could not store Telegram update %s", update["update_id"])
            return web.json_response({"error": "not stored, try again"}, status=503)
        return web.json_response({"ok": True})

    async def accept(self, update: dict[str, Any]) -> bool:
        """Store one update (raw Bot API JSON) in the inbox; False when seen before."""
        payload = json.dumps(update, ensure_ascii=False, separators=(",", ":"))
        return await self.services.accept(
            self.name, str(update["update_id"]), chat_key(update), payload
        )

    async def _poll(self) -> None:
        """Long-poll getUpdates; an update is confirmed (offset) only once it is stored."""
        offset: int | None = None
        delay = 1.0
        while True:
            try:
                updates = await self.bot.get_updates(
                    offset=offset,
                    timeout=max(1, int(self.poll_timeout)),
                    allowed_updates=list(ALLOWED_UPDATES),
                )
                for update in updates:
                    await self.accept(update.to_dict())
                    offset = update.update_id + 1
                delay = 1.0
            except Exception as exc:  # the poller outlives any one failure
                reason = (
                    self.sender.translate("getUpdates", exc)
                    if isinstance(exc, TelegramError)
                    else exc
                )
                log.warning("polling Telegram failed (%s); retrying in %.0f s", reason, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 30.0)

    async def process(self, item: InboxItem) -> None:
        """Handle one stored update: a button press or a message."""
        try:
            update = Update.de_json(json.loads(item.payload), self.bot)
        except Exception as exc:  # retrying cannot make an unreadable update readable
            log.warning("ignoring unreadable Telegram update %s: %r", item.update_id, exc)
            return
        try:
            query = update.callback_query
            if query is not None and is_card_data(query.data):
                await self.review.on_press(query)
            elif query is not None:
                await self.feedback.on_press(query)
            elif update.message is not None:
                await self._on_message(update.message, item)
        except Undeliverable as exc:
            log.warning("%s; dropping update %s", exc, item.update_id)

    async def _on_message(self, message: TgMessage, item: InboxItem) -> None:
        user, chat = message.from_user, message.chat
        if user is None or user.is_bot or chat.type == ChatType.CHANNEL:
            return
        is_group = chat.type != ChatType.PRIVATE
        if is_group and not addressed(message, self.bot.id, self.bot.username):
            return
        topic = message.message_thread_id if message.is_topic_message else None
        ref = ChatRef(
            channel=self.name,
            chat_id=str(chat.id),
            user_id=str(user.id),
            thread_id=str(topic) if topic else None,
            is_group=is_group,
        )
        reply_to = message.message_id if is_group else None
        if not self.allowed(user.id):
            await self._notice(ref, REFUSAL.format(user_id=user.id), reply_to)
            return
        text = message.text
        if text is None:
            if not is_group and message.effective_attachment is not None:
                await self._notice(ref, TEXT_ONLY, reply_to)
            return
        if await self.review.take_reason(message, ref, text):
            return
        if await self.feedback.take_comment(message, ref, text):
            return
        command = command_of(message, self.bot.username)
        if command is not None and command not in KNOWN and is_group and "@" not in text.split()[0]:
            return  # a bare command in a group may be another bot's
        if command is not None:
            await self._on_command(command, ref, user, reply_to)
            return
        incoming = IncomingMessage(
            chat=ref,
            text=without_mention(text, self.bot.username),
            user_name=user.first_name,
            platform_message_id=str(message.message_id),
            inbox_id=item.id,
        )
        await self.answer(incoming)

    async def _on_command(
        self, command: str, chat: ChatRef, user: User, reply_to: int | None
    ) -> None:
        if command in ADMIN_COMMAND_NAMES:
            await self.review.on_command(command, chat, user, reply_to)
            return
        hint = GROUP_HINT if chat.is_group else ""
        if not chat.is_group and self.cards.is_admin(user.id):
            hint = ADMIN_HELP
        if command == "start":
            text = START.format(name=user.first_name) + hint
        elif command == "help":
            text = HELP + hint
        elif command == "new":
            await self.services.store.finish_chat_session(self.name, chat.chat_id, "new")
            text = NEW
        else:
            text = UNKNOWN.format(command=command)
        await self._notice(chat, text, reply_to)

    # ---- out ------------------------------------------------------------------------------

    async def answer(self, incoming: IncomingMessage) -> Reply:
        """The shared turn, with "typing…" while the model works and group answers as replies."""
        async with self.sender.typing(Target.of(incoming.chat)):
            reply = await self.services.agent.respond(incoming)
        reply_to = None
        if incoming.chat.is_group and incoming.platform_message_id:
            reply_to = int(incoming.platform_message_id)
        reply.delivered_ids = await self._deliver(incoming.chat, reply, reply_to)
        return reply

    async def send(self, chat: ChatRef, reply: Reply) -> list[str]:
        """Deliver a reply in parts, the last one with its buttons; returns the message ids."""
        return await self._deliver(chat, reply, None)

    async def _deliver(self, chat: ChatRef, reply: Reply, reply_to: int | None) -> list[str]:
        parts = render_parts(reply.text)
        ids = list(reply.delivered_ids)
        if len(ids) >= len(parts):
            log.info("answer %s was delivered before; not sending again", reply.message_id)
            return ids
        markup = keyboard(reply.buttons) if reply.buttons else None
        target = Target.of(chat)
        for index in range(len(ids), len(parts)):
            last = index == len(parts) - 1
            sent = await self.sender.send(
                target,
                parts[index],
                markup=markup if last else None,
                reply_to=reply_to if index == 0 else None,
            )
            ids.append(str(sent.message_id))
            if reply.message_id is not None:
                # Each part is recorded as it goes out, so a retry after a failure (a 429 that
                # outlasted the retries, a network error) continues with the next part.
                await self.services.store.set_platform_ids(reply.message_id, ids)
        return ids

    async def _notice(self, chat: ChatRef, text: str, reply_to: int | None) -> None:
        await self.sender.send(Target.of(chat), Part.of_text(text), reply_to=reply_to)

    async def _best_effort(self, what: str, fn: Any) -> None:
        try:
            await self.sender.call(what, fn)
        except ChannelError as exc:
            log.warning("%s; continuing without it", exc)
