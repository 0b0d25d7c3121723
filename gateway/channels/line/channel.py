"""The LINE channel: signed webhooks in; answers out by reply token, then push; 👍/👎 postbacks.

The webhook verifies the signature on the raw body, stores every event under
its webhookEventId and answers 200 at once (LINE waits about 2 s). The inbox
worker then calls `process`: text in 1:1 chats, and in groups and rooms when
the bot is mentioned or a command is used, goes to the agent. Postbacks have
their own inbox key, so a rating never waits behind a turn.
"""

from __future__ import annotations

import json
import logging
import math
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, ClassVar

from aiohttp import web
from linebot.v3.messaging import Message
from linebot.v3.webhook import SignatureValidator
from linebot.v3.webhooks import (
    Event,
    FollowEvent,
    JoinEvent,
    MessageEvent,
    PostbackEvent,
    TextMessageContent,
)

from gateway.channels.base import Channel, storable
from gateway.channels.line.cards import LineCards
from gateway.channels.line.client import LineClient, PushQuotaExhausted
from gateway.channels.line.delivery import CURRENT_EVENT, EventContext, LineOutbox
from gateway.channels.line.events import (
    chat_of,
    command_of,
    inbox_key,
    parse_event,
    self_mentions,
    without_spans,
)
from gateway.channels.line.feedback import (
    ASK_WHAT_WENT_WRONG,
    THANKS_FOR_COMMENT,
    LineFeedback,
    parse_rating,
)
from gateway.channels.line.format import line_parts
from gateway.channels.line.review import LineReview
from gateway.config import Settings
from gateway.conversation.review import ADMIN_COMMAND_NAMES, ADMIN_HELP
from gateway.core.models import Button, ChatRef, IncomingMessage, Reply
from gateway.core.records import InboxItem
from gateway.errors import ChannelError, StoreError
from gateway.skills.card_buttons import is_card_data

log = logging.getLogger(__name__)

WEBHOOK_PATH = "/webhook/line"
JSON = "application/json"
MAX_WEBHOOK_BYTES = 1024 * 1024

HELP = (
    "I'm an AI assistant: ask me anything in plain words.\n"
    "• In a group, mention me so I know you're talking to me.\n"
    "• Tap 👍 or 👎 under an answer to tell me how I did.\n"
    "• /new starts a fresh conversation.\n"
    "• /help shows this message."
)
GREETING = "Hi, thanks for adding me! 👋\n\n" + HELP
WELCOME_BACK = "Welcome back! 👋\n\n" + HELP
GROUP_GREETING = "Hi everyone! 👋 Mention me or start a message with /help to see what I can do."
NEW_SESSION = "Okay, let's start over. I've set our earlier conversation aside."
REFUSAL = "Sorry, this assistant is private and only answers the people it was set up for."


class LineChannel(Channel):
    """LINE Messaging API adapter (line-bot-sdk v3, async)."""

    name: ClassVar[str] = "line"

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        if settings.line_channel_secret is None or settings.line_channel_access_token is None:
            raise ChannelError("LINE needs LINE_CHANNEL_SECRET and LINE_CHANNEL_ACCESS_TOKEN")
        self._signature = SignatureValidator(settings.line_channel_secret.get_secret_value())
        self.client = LineClient(
            settings.line_channel_access_token.get_secret_value(), settings.line_api_base_url
        )
        # The loading animation lasts 5-60 s in steps of 5; cover the model's timeout.
        self.loading_seconds = min(60, max(5, 5 * math.ceil(settings.llm_timeout_seconds / 5)))
        self._outbox: LineOutbox | None = None
        self._feedback: LineFeedback | None = None
        self.cards = LineCards(self)
        self.review = LineReview(self, self.cards)

    @property
    def outbox(self) -> LineOutbox:
        if self._outbox is None:
            raise ChannelError("LINE channel used before start")
        return self._outbox

    @property
    def feedback(self) -> LineFeedback:
        if self._feedback is None:
            raise ChannelError("LINE channel used before start")
        return self._feedback

    def routes(self) -> list[web.RouteDef]:
        return [web.post(WEBHOOK_PATH, self.webhook)]

    def card_transport(self) -> LineCards:
        return self.cards

    async def start(self) -> None:
        await self.client.open()  # the SDK's HTTP session must be made inside the loop
        self._outbox = LineOutbox(self.client, self.services.store)
        self._feedback = LineFeedback(self.services.store)
        await self._outbox.load()

    async def stop(self) -> None:
        await self.client.close()

    def health(self) -> dict[str, Any]:
        since = self._outbox.quota_exhausted_since if self._outbox else None
        return {
            "configured": True,
            "webhook": WEBHOOK_PATH,
            "push_quota_exhausted": since is not None,
            "push_quota_exhausted_since": (
                None if since is None else datetime.fromtimestamp(since, UTC).isoformat()
            ),
        }

    # -- in ---------------------------------------------------------------------------------

    async def webhook(self, request: web.Request) -> web.Response:
        """Verify, store every event, then 200; nothing slow happens before the answer."""
        if (request.content_length or 0) > MAX_WEBHOOK_BYTES:
            raise web.HTTPRequestEntityTooLarge(MAX_WEBHOOK_BYTES, request.content_length or 0)
        signature = request.headers.get("X-Line-Signature", "")
        if not signature:
            return web.json_response({"error": "missing X-Line-Signature"}, status=401)
        raw = await request.read()
        if len(raw) > MAX_WEBHOOK_BYTES:
            raise web.HTTPRequestEntityTooLarge(MAX_WEBHOOK_BYTES, len(raw))
        try:
            body = raw.decode("utf-8")
        except UnicodeDecodeError:
            return web.json_response({"error": "body is not UTF-8"}, status=400)
        # A signature is base64: anything else (bytes that are not even UTF-8) is not LINE's.
        if not signature.isascii() or not self._signature.validate(body, signature):
            log.warning("LINE webhook with an invalid signature from %s", request.remote)
            return web.json_response({"error": "invalid signature"}, status=401)
        if request.content_type != JSON:
            return web.json_response({"error": f"Content-Type must be {JSON}"}, status=415)
        try:
            payload = json.loads(body)
            events = payload["events"]
            if not isinstance(events, list):
                raise TypeError("events is not a list")
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            return web.json_response({"error": f"malformed webhook body: {exc}"}, status=400)
        if not storable(payload):
            return web.json_response({"error": "body holds a lone surrogate"}, status=400)
        destination = payload.get("destination")
        for event in events:
            event_id = event.get("webhookEventId") if isinstance(event, dict) else None
            if not isinstance(event_id, str) or not event_id:
                log.warning("skipping a LINE event without webhookEventId")
                continue
            stored = json.dumps({**event, "destination": destination}, ensure_ascii=False)
            try:
                await self.services.accept(self.name, event_id, inbox_key(event, event_id), stored)
            except StoreError:
                # LINE redelivers the whole body (if redelivery is on); the events stored
                # already are recognised by their ids then.
                log.exception("could not store LINE event %s", event_id)
                return web.json_response({"error": "not stored, try again"}, status=503)
        return web.json_response({})

    async def process(self, item: InboxItem) -> None:
        event = parse_event(json.loads(item.payload))
        if event is None or event.mode != "active":
            return  # unknown, malformed, or meant for another channel in standby mode
        chat = chat_of(event.source)
        if chat is None:
            log.info("skipping LINE %s event %s without a source", event.type, item.update_id)
            return
        context = EventContext(
            event_id=event.webhook_event_id,
            reply_token=getattr(event, "reply_token", None),
            timestamp=event.timestamp / 1000,
            redelivery=bool(event.delivery_context.is_redelivery),
        )
        token = CURRENT_EVENT.set(context)
        try:
            await self._dispatch(event, chat, item)
        except PushQuotaExhausted:
            # No retry can help before the quota resets; the outbox logged it, /healthz shows it.
            log.error("LINE event %s could not be answered: push quota exhausted", item.update_id)
        finally:
            CURRENT_EVENT.reset(token)

    async def _dispatch(self, event: Event, chat: ChatRef, item: InboxItem) -> None:
        if isinstance(event, MessageEvent) and isinstance(event.message, TextMessageContent):
            await self._on_text(event.message, chat, item)
        elif isinstance(event, PostbackEvent):
            await self._on_postback(event.postback.data, chat)
        elif isinstance(event, FollowEvent):
            back = bool(getattr(event.follow, "is_unblocked", False))
            greeting = WELCOME_BACK if back else GREETING
            await self._notice(chat, greeting if self._allowed(chat.user_id) else REFUSAL)
        elif isinstance(event, JoinEvent):
            await self._notice(chat, GROUP_GREETING)

    async def _on_text(self, message: TextMessageContent, chat: ChatRef, item: InboxItem) -> None:
        text, mentioned = message.text, False
        if chat.is_group:
            spans = self_mentions(message)
            mentioned, text = bool(spans), without_spans(text, spans)
        command = command_of(text)
        if command is None and await self.review.take_reason(chat, text.strip()):
            return
        if command is None and chat.user_id is not None:
            question = await self.feedback.pending_comment(chat, chat.user_id)
            if question is not None:
                await self.feedback.save_comment(question, text)
                await self._notice(chat, THANKS_FOR_COMMENT)
                await self.feedback.close(question)
                return
        if chat.is_group and not mentioned and command is None:
            return
        if not self._allowed(chat.user_id):
            await self._notice(chat, REFUSAL)
            return
        if command is not None and command[1:] in ADMIN_COMMAND_NAMES:
            await self.review.on_command(command, chat)
        elif command == "/new":
            await self.services.store.finish_chat_session(self.name, chat.chat_id, "new")
            await self._notice(chat, NEW_SESSION)
        elif command == "/help" or not text.strip():
            admin = self.cards.is_admin(chat.user_id) and not chat.is_group
            await self._notice(chat, HELP + ADMIN_HELP if admin else HELP)
        else:
            if not chat.is_group and chat.user_id is not None:
                await self._loading(chat.user_id)
            incoming = IncomingMessage(
                chat=chat, text=text.strip(), platform_message_id=message.id, inbox_id=item.id
            )
            await self.answer(incoming)

    async def _on_postback(self, data: str, chat: ChatRef) -> None:
        if is_card_data(data):
            await self.review.on_postback(data, chat)
            return
        rating = parse_rating(data)
        if rating is None:
            log.info("ignoring LINE postback %r", data[:50])
            return
        if chat.user_id is None or not self._allowed(chat.user_id):
            return
        message_id, value = rating
        if not await self.feedback.rate(chat, chat.user_id, message_id, value):
            log.warning(
                "ignoring a rating of %s: not an answer in chat %s", message_id, chat.chat_id
            )
            return
        if value < 0:
            await self._notice(chat, ASK_WHAT_WENT_WRONG)

    def _allowed(self, user_id: str | None) -> bool:
        allowed = self.settings.line_allowed_user_ids
        if not allowed:
            return True
        return user_id is not None and (
            user_id in allowed or user_id in self.settings.line_admin_ids
        )

    async def _loading(self, user_id: str) -> None:
        try:
            await self.client.show_loading(user_id, self.loading_seconds)
        except ChannelError as exc:
            log.warning("LINE loading animation failed: %s", exc)

    # -- out --------------------------------------------------------------------------------

    async def _notice(self, chat: ChatRef, text: str) -> None:
        await self.send(chat, Reply(text=text, kind="notice"))

    async def say(self, chat: ChatRef, text: str, *, buttons: Sequence[Button] = ()) -> None:
        """A notice (not an answer of the model), with quick-reply buttons if given."""
        await self.send(chat, Reply(text=text, kind="notice", buttons=list(buttons)))

    async def deliver(self, chat: ChatRef, messages: Sequence[Message]) -> list[str]:
        """Send any LINE messages to the chat, by the event's reply token first."""
        event = CURRENT_EVENT.get()
        ref = event.next_ref() if event is not None else f"push:{uuid.uuid4()}"
        return await self.outbox.deliver_messages(chat.chat_id, messages, ref)

    async def send(self, chat: ChatRef, reply: Reply) -> list[str]:
        """Plain-text parts of at most 5000 UTF-16 units; 👍/👎 as quick replies on the last."""
        event = CURRENT_EVENT.get()
        if reply.message_id is not None:
            ref = f"answer:{reply.message_id}"
        elif event is not None:
            ref = event.next_ref()
        else:
            ref = f"push:{uuid.uuid4()}"
        parts = line_parts(reply.text) or [reply.text.strip() or "…"]
        return await self.outbox.deliver(chat.chat_id, parts, reply.buttons, ref)
