"""The Loopchat channel: a webhook checked by its secret header, stored, then answered.

An update is `{"id", "chat", "user", "text" | "press", "group", "mention", "message"}`: a
text (in a group, `mention` says it is addressed to the bot) or a button press (`message`:
the id of the message whose button it was).
"""

from __future__ import annotations

import hmac
import json
from typing import Any, ClassVar

from aiohttp import web

from gateway.channels.base import INTAKE, Channel, Handler, Ports, storable
from gateway.conversation.models import Audience, Dialect, Message, Press, Profile
from gateway.core.models import ChatRef
from gateway.core.records import InboxItem
from gateway.errors import ChannelError, StoreError
from gateway.review.buttons import CardSigner
from tests.channels.loopchat.responder import LoopClient, LoopResponder
from tests.channels.loopchat.settings import LoopSettings
from tests.channels.loopchat.spec import SPEC

SECRET_HEADER = "X-Loopchat-Secret"
MAX_BODY = 64 * 1024

LOOPCHAT = Dialect(
    help="Ask me anything; rate my answers with 👍 or 👎. /new starts over.",
    new="Starting over.",
    refusal="Sorry, this bot is private ({user_id}).",
    thanks_for_comment="Thanks for telling me.",
    comment_seconds=300.0,
    reason_seconds=300.0,
)


class LoopChannel(Channel):
    """Loopchat's adapter: its webhook, and a handler of what it stored."""

    name: ClassVar[str] = SPEC.name

    def __init__(self, settings: LoopSettings) -> None:
        if settings.api_url is None or settings.secret is None:
            raise ChannelError("Loopchat needs LOOPCHAT_API_URL and LOOPCHAT_SECRET")
        self.secret = settings.secret.get_secret_value()
        self.client = LoopClient(settings.api_url, self.secret)
        self.profile = Profile(
            channel=self.name,
            dialect=LOOPCHAT,
            audience=Audience.of(settings.allowed_user_ids, settings.admin_ids),
            signer=CardSigner(self.secret),
            label=SPEC.label,
            capabilities=SPEC.capabilities,
        )
        self.ports: Ports | None = None

    def routes(self) -> list[web.RouteDef]:
        return [web.post(SPEC.route, self.webhook)]

    async def start(self, ports: Ports) -> Handler:
        await self.client.open()
        self.ports = ports
        return self.process

    async def stop(self) -> None:
        await self.client.close()

    async def webhook(self, request: web.Request) -> web.Response:
        """Check the secret, store the update, then 200."""
        given = request.headers.get(SECRET_HEADER, "")
        if not hmac.compare_digest(given.encode(), self.secret.encode()):
            return web.json_response({"error": "wrong secret"}, status=401)
        try:
            update = json.loads(await request.content.read(MAX_BODY))
            update_id, chat = update["id"], update["chat"]
            if not isinstance(update_id, str) or not isinstance(chat, str):
                raise TypeError("id and chat are strings")
        except (ValueError, KeyError, TypeError) as exc:
            return web.json_response({"error": f"not an update: {exc}"}, status=400)
        if not storable(update):
            return web.json_response({"error": "body holds a lone surrogate"}, status=400)
        # A press has its own inbox key, so a rating never waits behind a turn.
        key = f"{chat}:press" if "press" in update else chat
        try:
            await request.config_dict[INTAKE].accept(self.name, update_id, key, json.dumps(update))
        except StoreError:
            return web.json_response({"error": "not stored, try again"}, status=503)
        return web.json_response({})

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
