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

import asyncio
import base64
import hashlib
import hmac
import json
import logging
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar

from aiohttp import web

from gateway.channels.api import (
    Audience,
    CardSigner,
    Channel,
    ChannelError,
    ChatRef,
    Greeting,
    Handler,
    InboxItem,
    Message,
    Ports,
    Press,
    Profile,
    PushQuota,
    Refused,
    Responder,
    Settings,
    Update,
    Webhook,
    cancel_and_wait,
)
from gateway.channels.line import quotes
from gateway.channels.line.admin_cards import FlexCards, LineCards
from gateway.channels.line.client import LineClient, PushQuotaExhausted
from gateway.channels.line.delivery import EventContext, LineOutbox
from gateway.channels.line.dialect import LINE
from gateway.channels.line.events import (
    Content,
    LineEvent,
    command_of,
    content_of,
    event_id_of,
    inbox_key,
    read_event,
    remote_of,
    self_mentions,
    without_spans,
)
from gateway.channels.line.responder import LineResponder
from gateway.channels.line.settings import LineSettings
from gateway.channels.line.spec import SPEC

if TYPE_CHECKING:
    from gateway.channels.api import Card, CardDelivery, RepeatNotice, Texts

log = logging.getLogger(__name__)

WEBHOOK_PATH = SPEC.route
JSON = "application/json"
SIGNATURE_HEADER = "X-Line-Signature"
USER_EVENTS = ("message", "postback", "follow", "unsend")
"""Events a user's action makes: one the gateway cannot place in a chat is counted."""


class LineChannel(Channel):
    """LINE Messaging API adapter: the API's JSON on aiohttp, line-bot-sdk's Flex models for
    cards (loaded with the first card)."""

    name: ClassVar[str] = SPEC.name

    def __init__(self, settings: Settings, *, load_in_background: bool = False) -> None:
        """`load_in_background`: `start` returns before the session is open (the outbox reads
        its quota state); the handler waits for it. Off, `start` opens it first."""
        section = self.settings = settings.section(LineSettings)
        if section.line_channel_secret is None or section.line_channel_access_token is None:
            raise ChannelError("LINE needs LINE_CHANNEL_SECRET and LINE_CHANNEL_ACCESS_TOKEN")
        secret = section.line_channel_secret.get_secret_value()
        self.webhook = LineWebhook(self)
        self._secret = secret.encode()
        self._background = load_in_background
        self._loading: asyncio.Future[LineSession] | None = None
        self._client: LineClient | None = None
        self._bubbles = FlexCards(CardSigner(secret))
        # The loading animation lasts at most 60 s a call; it is renewed before it ends for
        # as long as the model writes (a streamed answer has no total timeout).
        self.loading_seconds = 60
        self.loading_renew_seconds = 50.0
        self.profile = Profile(
            channel=self.name,
            dialect=LINE,
            audience=Audience.of(section.line_allowed_user_ids, section.line_admin_ids),
            signer=CardSigner(secret),
            label=SPEC.label,
            capabilities=SPEC.capabilities,
            push_quota=self.push_quota,
        )
        self.session: LineSession | None = None
        """The open client and outbox, between `start` (once loaded) and `stop`."""

    @property
    def client(self) -> LineClient:
        if self._client is None:
            raise ChannelError("the LINE client is not open yet")
        return self._client

    async def push_quota(self) -> PushQuota:
        """This month's push quota, as LINE tells it; before `start` (the CLI) through a
        client of its own."""
        if self._client is not None:
            return await self._client.push_quota()
        token = self.settings.line_channel_access_token
        assert token is not None  # checked in __init__
        client = LineClient(token.get_secret_value(), self.settings.line_api_base_url)
        try:
            return await client.push_quota()
        finally:
            await client.close()

    @property
    def bubbles(self) -> FlexCards:
        return self._bubbles

    def signed(self, body: bytes, signature: str) -> bool:
        """Whether `signature` is the channel secret's HMAC-SHA256 of `body`, base64 (LINE's
        webhook signature), compared in constant time."""
        digest = hmac.new(self._secret, body, hashlib.sha256).digest()
        return hmac.compare_digest(base64.b64encode(digest), signature.encode("ascii"))

    def routes(self) -> list[web.RouteDef]:
        return [self.webhook.route]

    async def start(self, ports: Ports) -> Handler:
        self._loading = asyncio.ensure_future(self._open(ports))
        if not self._background:
            await self._loading
        return self._process

    async def _open(self, ports: Ports) -> LineSession:
        token = self.settings.line_channel_access_token
        assert token is not None  # checked in __init__
        client = self._client = LineClient(
            token.get_secret_value(),
            self.settings.line_api_base_url,
            data_host=self.settings.line_data_api_base_url,
        )
        await client.open()  # the HTTP session must be made inside the loop
        outbox = LineOutbox(client, ports.deliveries)
        await outbox.load()
        self.session = LineSession(self, outbox, ports)
        return self.session

    async def ready(self) -> LineSession:
        """The open session; ChannelError before `start`."""
        if self._loading is None:
            raise ChannelError("the LINE channel is not started")
        return await asyncio.shield(self._loading)

    async def _process(self, item: InboxItem) -> None:
        await (await self.ready()).process(item)

    async def stop(self) -> None:
        loading, self._loading = self._loading, None
        await cancel_and_wait(loading, quiet=(Exception,))
        self.session = None
        if self._client is not None:
            await self._client.close()

    def task_responder(self, chat: ChatRef, ref: str) -> Responder | None:
        return self.session.task_responder(chat, ref) if self.session is not None else None

    def card_transport(self) -> LineCards | LaterCards | None:
        if self.session is not None:
            return self.session.cards
        return LaterCards(self) if self._loading is not None else None

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


class LineWebhook(Webhook):
    """LINE's posts: signed bodies (HMAC-SHA256 of the body with the channel secret), each
    with its events."""

    def __init__(self, line: LineChannel) -> None:
        super().__init__(SPEC.name)
        self.line = line

    def credentials(self, request: web.Request) -> None:
        if not request.headers.get(SIGNATURE_HEADER, ""):
            raise Refused(401, f"missing {SIGNATURE_HEADER}")

    async def verify(self, request: web.Request, body: bytes) -> None:
        signature = request.headers.get(SIGNATURE_HEADER, "")
        try:
            body.decode("utf-8")
        except UnicodeDecodeError:
            raise Refused(400, "body is not UTF-8") from None
        # A signature is base64: anything else (bytes that are not even UTF-8) is not LINE's.
        if not signature.isascii() or not self.line.signed(body, signature):
            log.warning("LINE webhook with an invalid signature from %s", request.remote)
            raise Refused(401, "invalid signature")

    def updates(self, body: Any) -> list[Update]:
        events = body["events"]
        if not isinstance(events, list):
            raise TypeError("events is not a list")
        destination = body.get("destination")
        found = []
        for event in events:
            if not isinstance(event, dict):
                log.warning("skipping a LINE event that is not an object")
                continue
            event_id = event_id_of(event)
            stored = {**event, "destination": destination}
            found.append(Update(event_id, inbox_key(event, event_id), stored))
        return found


class LaterCards:
    """LINE's card transport while the session opens: the same admins; sending waits."""

    channel = SPEC.name

    def __init__(self, line: LineChannel) -> None:
        self._line = line

    def admins(self) -> list[str]:
        return list(self._line.settings.line_admin_ids)

    async def send_card(self, chat_id: str, card: Card) -> str | None:
        return await (await self._line.ready()).cards.send_card(chat_id, card)

    async def edit_card(self, copy: CardDelivery, card: Card) -> None:
        await (await self._line.ready()).cards.edit_card(copy, card)

    async def send_notice(self, chat_id: str, text: str, ref: str) -> None:
        await (await self._line.ready()).cards.send_notice(chat_id, text, ref)

    async def send_repeats(self, chat_id: str, notice: RepeatNotice, texts: Texts) -> str | None:
        return await (await self._line.ready()).cards.send_repeats(chat_id, notice, texts)

    async def look_up_language(self, user_id: str) -> str | None:
        return await (await self._line.ready()).cards.look_up_language(user_id)


class LineSession:
    """An open LINE client: decodes stored events for the conversation layer."""

    def __init__(self, channel: LineChannel, outbox: LineOutbox, ports: Ports) -> None:
        self.client = channel.client
        self.bubbles = channel.bubbles
        self.loading_seconds = channel.loading_seconds
        self.loading_renew_seconds = channel.loading_renew_seconds
        self.outbox = outbox
        self.cards = LineCards(outbox, channel.bubbles, channel.settings.line_admin_ids)
        self.conversation = ports.conversation
        self.ports = ports

    def task_responder(self, chat: ChatRef, ref: str) -> Responder:
        """Pushes into `chat` (no reply token): its notices' retry keys are made of `ref`,
        the same on every attempt at one occurrence."""
        context = EventContext(event_id=ref, reply_token=None, timestamp=0.0, redelivery=True)
        return self._responder(chat, context)

    def _responder(self, chat: ChatRef, context: EventContext) -> LineResponder:
        return LineResponder(
            chat,
            context,
            self.outbox,
            self.client,
            self.bubbles,
            loading_seconds=self.loading_seconds,
            loading_renew_seconds=self.loading_renew_seconds,
        )

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
        line_out = self._responder(chat, context)
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
        if item.given_up and event.type != "message":
            return  # only a message's sender is told the inbox gave up on it
        if event.type in ("message", "messageEdited"):
            raw = event.part("message")
            message = decode_message(raw, chat, item, self.client.content)
            if event.type == "messageEdited":
                message = replace(message, edited=True)
            else:
                message = await self._with_quoted(raw, message)
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
        elif event.type in ("unfollow", "leave"):  # blocked, or removed from the group
            await conversation.chat_gone(chat)
        elif event.type == "unsend":
            unsent = event.part("unsend").get("messageId")
            if isinstance(unsent, str) and unsent:
                await conversation.on_unsend(chat, unsent)
        else:
            log.info("LINE %s event %s needs no answer", event.type or "untyped", event.event_id)

    async def _with_quoted(self, raw: dict[str, Any], message: Message) -> Message:
        """A text quoting an image, audio or file asks about it; media is remembered for that."""
        meta, chat_id = self.ports.deliveries, message.chat.chat_id
        if message.media is not None:
            await quotes.remember(meta, chat_id, raw, message.chat.user_id)
            return message
        if message.command is not None or not message.text:
            return message
        found = await quotes.quoted(meta, chat_id, raw)
        remote = remote_of(found, self.client.content) if found is not None else None
        if found is None or remote is None:
            return message
        media, _, _ = content_of(found)
        return replace(message, media=media, attachment=remote)


def decode_message(
    message: dict[str, Any], chat: ChatRef, item: InboxItem, content: Content | None = None
) -> Message:
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
            attachment=remote_of(message, content) if content is not None else None,
            message_id=message_id,
            addressed=False,  # LINE has no way to mention the bot on media
            inbox_id=item.id,
            given_up=item.given_up,
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
        given_up=item.given_up,
    )
