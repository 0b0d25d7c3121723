"""The Loopchat channel: a webhook checked by its secret header (the shared `Webhook`), stored,
then answered.

An update is `{"id", "chat", "user", "text" | "press", "group", "mention", "message"}`: a
text (in a group, `mention` says it is addressed to the bot) or a button press (`message`:
the id of the message whose button it was).
"""

from __future__ import annotations

import hmac
import json
from typing import Any, ClassVar

from aiohttp import web

from gateway.channels.api import (
    Audience,
    CardSigner,
    Channel,
    ChannelError,
    ChatRef,
    Dialect,
    Handler,
    InboxItem,
    Message,
    Ports,
    Press,
    Profile,
    Refused,
    Update,
    Webhook,
)
from tests.channels.loopchat.responder import LoopClient, LoopResponder
from tests.channels.loopchat.settings import LoopSettings
from tests.channels.loopchat.spec import SPEC

SECRET_HEADER = "X-Loopchat-Secret"

LOOPCHAT = Dialect(
    help="Ask me anything; rate my answers with 👍 or 👎. /new starts over.",
    new="Starting over.",
    refusal="Sorry, this bot is private ({user_id}).",
    thanks_for_comment="Thanks for telling me.",
    comment_seconds=300.0,
    reason_seconds=300.0,
)


class LoopWebhook(Webhook):
    """Loopchat's posts: its secret header, then one update per body."""

    max_bytes = 64 * 1024

    def __init__(self, secret: str) -> None:
        super().__init__(SPEC.name)
        self.secret = secret.encode()

    def credentials(self, request: web.Request) -> None:
        given = request.headers.get(SECRET_HEADER, "")
        if not hmac.compare_digest(given.encode("utf-8", "surrogatepass"), self.secret):
            raise Refused(401, "wrong secret")

    def updates(self, body: Any) -> list[Update]:
        update_id, chat = body["id"], body["chat"]
        if not isinstance(update_id, str) or not isinstance(chat, str):
            raise TypeError("id and chat are strings")
        # A press has its own inbox key, so a rating never waits behind a turn.
        return [Update(update_id, f"{chat}:press" if "press" in body else chat, body)]


class LoopChannel(Channel):
    """Loopchat's adapter: its webhook, and a handler of what it stored."""

    name: ClassVar[str] = SPEC.name

    def __init__(self, settings: LoopSettings) -> None:
        if settings.loopchat_api_url is None or settings.loopchat_secret is None:
            raise ChannelError("Loopchat needs LOOPCHAT_API_URL and LOOPCHAT_SECRET")
        self.secret = settings.loopchat_secret.get_secret_value()
        self.client = LoopClient(settings.loopchat_api_url, self.secret)
        self.webhook = LoopWebhook(self.secret)
        self.profile = Profile(
            channel=self.name,
            dialect=LOOPCHAT,
            audience=Audience.of(settings.loopchat_allowed_user_ids, settings.loopchat_admin_ids),
            signer=CardSigner(self.secret),
            label=SPEC.label,
            capabilities=SPEC.capabilities,
        )
        self.ports: Ports | None = None

    def routes(self) -> list[web.RouteDef]:
        return [self.webhook.route]

    async def start(self, ports: Ports) -> Handler:
        await self.client.open()
        self.ports = ports
        return self.process

    async def stop(self) -> None:
        await self.client.close()

    async def process(self, item: InboxItem) -> None:
        assert self.ports is not None, "started before the inbox hands it updates"
        update: dict[str, Any] = json.loads(item.payload)
        group = bool(update.get("group"))
        chat = ChatRef(
            channel=self.name, chat_id=update["chat"], user_id=update.get("user"), is_group=group
        )
        pressed = update.get("message") if isinstance(update.get("message"), str) else None
        responder = LoopResponder(self.client, chat, self.ports.deliveries, pressed)
        out = self.ports.fenced(responder, item)
        conversation = self.ports.conversation
        if "press" in update:
            press = Press(chat=chat, data=str(update["press"]), inbox_id=item.id)
            await conversation.on_press(press, out)
            return
        text = str(update.get("text", "")).strip()
        command = text[1:].split(maxsplit=1)[0].lower() if text.startswith("/") else None
        message = Message(
            chat=chat,
            text=text,
            message_id=item.update_id,
            command=command or None,
            addressed=not group or bool(update.get("mention")) or command is not None,
            inbox_id=item.id,
        )
        await conversation.on_message(message, out)
