"""The LINE channel: signed webhooks in, decoded for the conversation layer; replies out.

The webhook verifies the signature on the raw body, stores every event under
its webhookEventId and answers 200 at once (LINE waits about 2 s). The inbox
worker then hands each stored event to the session, read from its JSON (the
SDK's models refuse events LINE sends): every message becomes a message for
the conversation layer, which decides what it gets (`conversation.content`);
postbacks become presses, and have their own inbox key, so a rating never
waits behind a turn; unsend takes a message back. Replies go out by the
event's reply token first, then by push (`LineOutbox`).
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, ClassVar

from aiohttp import web
from linebot.v3.webhook import SignatureValidator

from gateway import jsonlimits
from gateway.channels.base import INTAKE, Channel, Handler, Ports, storable
from gateway.channels.line.cards import CardBubbles, LineCards
from gateway.channels.line.client import LineClient, PushQuotaExhausted
from gateway.channels.line.delivery import EventContext, LineOutbox
from gateway.channels.line.dialect import LINE
from gateway.channels.line.events import (
    LineEvent,
    command_of,
    content_of,
    event_id_of,
    inbox_key,
    read_event,
    self_mentions,
    without_spans,
)
from gateway.channels.line.responder import LineResponder
from gateway.config import Settings
from gateway.conversation.models import Audience, Greeting, Message, Press, Profile
from gateway.conversation.ports import Responder
from gateway.core.models import ChatRef
from gateway.core.records import InboxItem
from gateway.errors import ChannelError, StoreError
from gateway.serving import read_body
from gateway.skills.card_buttons import CardSigner

log = logging.getLogger(__name__)

WEBHOOK_PATH = "/webhook/line"
JSON = "application/json"
MAX_WEBHOOK_BYTES = 1024 * 1024
USER_EVENTS = ("message", "postback", "follow", "unsend")
"""Events a user's action makes: one the gateway cannot place in a chat is counted."""


class LineChannel(Channel):
    """LINE Messaging API adapter (line-bot-sdk v3, async)."""

    name: ClassVar[str] = "line"

    def __init__(self, settings: Settings) -> None:
        if settings.line_channel_secret is None or settings.line_channel_access_token is None:
            raise ChannelError("LINE needs LINE_CHANNEL_SECRET and LINE_CHANNEL_ACCESS_TOKEN")
        secret = settings.line_channel_secret.get_secret_value()
        self.settings = settings
        self._signature = SignatureValidator(secret)
        self.client = LineClient(
            settings.line_channel_access_token.get_secret_value(), settings.line_api_base_url
        )
        # The loading animation lasts 5-60 s in steps of 5; cover the model's timeout.
        self.loading_seconds = min(60, max(5, 5 * math.ceil(settings.llm_timeout_seconds / 5)))
        self.profile = Profile(
            channel=self.name,
            dialect=LINE,
            audience=Audience.of(settings.line_allowed_user_ids, settings.line_admin_ids),
            signer=CardSigner(secret),
            label="LINE",
        )
        self.bubbles = CardBubbles(self.profile.signer)
        self.session: LineSession | None = None
        """The open client and outbox, between `start` and `stop`."""

    def routes(self) -> list[web.RouteDef]:
        return [web.post(WEBHOOK_PATH, self.webhook)]

    async def start(self, ports: Ports) -> Handler:
        await self.client.open()  # the SDK's HTTP session must be made inside the loop
        outbox = LineOutbox(self.client, ports.deliveries)
        await outbox.load()
        self.session = LineSession(self, outbox, ports)
        return self.session.process

    async def stop(self) -> None:
        self.session = None
        await self.client.close()

    def card_transport(self) -> LineCards | None:
        return self.session.cards if self.session is not None else None

    def health(self) -> dict[str, Any]:
        since = self.session.outbox.quota_exhausted_since if self.session else None
        return {
            "configured": True,
            "webhook": WEBHOOK_PATH,
            "push_quota_exhausted": since is not None,
            "push_quota_exhausted_since": (
                None if since is None else datetime.fromtimestamp(since, UTC).isoformat()
            ),
        }

    async def webhook(self, request: web.Request) -> web.Response:
        """Verify, store every event, then 200; nothing slow happens before the answer."""
        if (request.content_length or 0) > MAX_WEBHOOK_BYTES:
            raise web.HTTPRequestEntityTooLarge(MAX_WEBHOOK_BYTES, request.content_length or 0)
        signature = request.headers.get("X-Line-Signature", "")
        if not signature:
            return web.json_response({"error": "missing X-Line-Signature"}, status=401)
        # Read only now that a signature was sent, at most 1 MB and within the body deadline.
        raw = await read_body(request, MAX_WEBHOOK_BYTES)
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
            payload = jsonlimits.loads(body)
            events = payload["events"]
            if not isinstance(events, list):
                raise TypeError("events is not a list")
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            return web.json_response({"error": f"malformed webhook body: {exc}"}, status=400)
        if not storable(payload):
            return web.json_response({"error": "body holds a lone surrogate"}, status=400)
        intake = request.config_dict[INTAKE]
        destination = payload.get("destination")
        for event in events:
            if not isinstance(event, dict):
                log.warning("skipping a LINE event that is not an object")
                continue
            event_id = event_id_of(event)
            stored = json.dumps({**event, "destination": destination}, ensure_ascii=False)
            try:
                await intake.accept(self.name, event_id, inbox_key(event, event_id), stored)
            except StoreError:
                # LINE redelivers the whole body (if redelivery is on); the events stored
                # already are recognised by their ids then.
                log.exception("could not store LINE event %s", event_id)
                return web.json_response({"error": "not stored, try again"}, status=503)
        return web.json_response({})


class LineSession:
    """An open LINE client: decodes stored events for the conversation layer."""

    def __init__(self, channel: LineChannel, outbox: LineOutbox, ports: Ports) -> None:
        self.client = channel.client
        self.bubbles = channel.bubbles
        self.loading_seconds = channel.loading_seconds
        self.outbox = outbox
        self.cards = LineCards(outbox, channel.bubbles, channel.settings.line_admin_ids)
        self.conversation = ports.conversation
        self.ports = ports

    async def process(self, item: InboxItem) -> None:
        event = read_event(json.loads(item.payload), item.update_id)
        if event.mode != "active":
            return  # meant for another channel in standby mode
        chat = event.chat
        if chat is None:
            if event.type in USER_EVENTS:
                self.conversation.unreadable(item.update_id, f"{event.type} without a source")
            else:
                log.info("skipping LINE %s event %s without a source", event.type, event.event_id)
            return
        context = EventContext(
            event_id=event.event_id,
            reply_token=event.reply_token,
            timestamp=event.timestamp,
            redelivery=event.redelivery,
        )
        line_out = LineResponder(
            chat,
            context,
            self.outbox,
            self.client,
            self.bubbles,
            loading_seconds=self.loading_seconds,
        )
        out = self.ports.fenced(line_out, item)  # nothing is said once the claim is gone
        try:
            await self._dispatch(event, chat, item, out)
        except PushQuotaExhausted:
            # No retry can help before the quota resets; the outbox logged it, /healthz shows it.
            log.error("LINE event %s could not be answered: push quota exhausted", item.update_id)

    async def _dispatch(
        self, event: LineEvent, chat: ChatRef, item: InboxItem, out: Responder
    ) -> None:
        conversation = self.conversation
        if event.type in ("message", "messageEdited"):
            message = decode_message(event.part("message"), chat, item)
            if event.type == "messageEdited":
                message = replace(message, edited=True)
            await conversation.on_message(message, out)
        elif event.type == "postback":
            data = event.part("postback").get("data")
            await conversation.on_press(
                Press(chat=chat, data=data if isinstance(data, str) else "", inbox_id=item.id), out
            )
        elif event.type == "follow":
            back = event.part("follow").get("isUnblocked") is True
            await conversation.on_greeting(
                Greeting(chat=chat, kind="refollow" if back else "follow"), out
            )
        elif event.type == "join":
            await conversation.on_greeting(Greeting(chat=chat, kind="join"), out)
        elif event.type == "unsend":
            unsent = event.part("unsend").get("messageId")
            if isinstance(unsent, str) and unsent:
                await conversation.on_unsend(chat, unsent)
        else:
            log.info("LINE %s event %s needs no answer", event.type or "untyped", event.event_id)


def decode_message(message: dict[str, Any], chat: ChatRef, item: InboxItem) -> Message:
    """A message as the conversation layer reads it; text loses the bot's own @mention."""
    raw_id = message.get("id")
    message_id = raw_id if isinstance(raw_id, str) and raw_id else None
    text = message.get("text")
    if message.get("type") != "text" or not isinstance(text, str):
        media, details, album = content_of(message)
        return Message(
            chat=chat,
            text=None,
            media=media,
            details=details,
            album=album,
            message_id=message_id,
            addressed=False,  # LINE has no way to mention the bot on media
            inbox_id=item.id,
        )
    mentioned = False
    if chat.is_group:
        spans = self_mentions(message)
        mentioned, text = bool(spans), without_spans(text, spans)
    command = command_of(text)
    if command is None and not text.strip():
        command = "/help"  # only the bot's name: say what it can do
    return Message(
        chat=chat,
        text=text.strip(),
        message_id=message_id,
        command=command[1:] if command else None,
        addressed=mentioned or command is not None,
        inbox_id=item.id,
    )
