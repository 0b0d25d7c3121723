"""The webhook every platform shares: credentials, a bounded body, JSON, stored before the 200.

A platform subclasses `Webhook` with what only it knows, and its channel serves
`webhook.route`:

* `credentials(request)`: the headers checked before a byte of the body is read (a secret
  header, or that a signature was sent);
* `verify(request, body)`: the raw body checked before it is trusted (a signature over it);
  nothing by default;
* `updates(body)`: the parsed JSON as the updates to store, each with its id (a redelivery
  is recognised by it) and its inbox key (updates sharing one are handled in order).

The rest is the same for every platform, in this order: 401 (or the hook's status) when the
credentials are refused; 415 for a body that is not `application/json`; the body read within
the server's body deadline (408) and at most `max_bytes` (413), the server having left it
unread (`OWN_BODY`); the hook's answer to the raw body; 400 for a body that is not JSON,
nested too deep, not the platform's updates, or holding text no database can keep (a lone
surrogate); every update stored through the intake before the platform hears 200, and 503
when it could not be (a locked database, a full disk: the platform delivers it again). A
malformed body is a 4xx, never a 500.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from aiohttp import web

from gateway.channels.base import INTAKE, stored_json
from gateway.errors import StoreError
from gateway.web import jsonlimits
from gateway.web.serving import read_body

log = logging.getLogger(__name__)

JSON = "application/json"
"""The only content type a webhook accepts."""
MAX_BYTES = 1024 * 1024
"""A platform's updates are a few KB; anything near this is not from the platform."""


class Refused(Exception):
    """A webhook's answer before anything is stored: a status and what was wrong."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Update:
    """One update of a webhook body, as the inbox keeps it."""

    update_id: str
    """The platform's id for it: the same update delivered again is stored once."""
    chat_key: str
    """Updates with the same key are handled one after another, in order."""
    value: Any
    """What is stored (as compact JSON) and handed to the channel's handler."""


class Webhook(ABC):
    """`POST /webhook/{channel}`: checked, read, parsed and stored as every platform's is."""

    max_bytes: ClassVar[int] = MAX_BYTES
    answer: ClassVar[bytes] = b"{}"
    """The body of the 200, the same bytes every time."""

    def __init__(self, channel: str) -> None:
        self.channel = channel

    @property
    def path(self) -> str:
        return f"/webhook/{self.channel}"

    @property
    def route(self) -> web.RouteDef:
        """The route its channel's `routes` returns."""
        return web.post(self.path, self.handle)

    @abstractmethod
    def credentials(self, request: web.Request) -> None:
        """Raise `Refused` (401) unless the headers say the platform sent this."""

    async def verify(self, request: web.Request, body: bytes) -> None:
        """Raise `Refused` unless the raw body is the platform's (its signature, say)."""
        return None

    @abstractmethod
    def updates(self, body: Any) -> Iterable[Update]:
        """The updates a parsed body holds; ValueError (or KeyError, TypeError) when it is
        not the platform's, said in words: the sender gets a 400 with them."""

    async def handle(self, request: web.Request) -> web.Response:
        try:
            found = await self._read(request)
        except Refused as refused:
            return web.json_response({"error": refused.reason}, status=refused.status)
        intake = request.config_dict[INTAKE]
        for update, payload in found:
            try:
                await intake.accept(self.channel, update.update_id, update.chat_key, payload)
            except StoreError:
                # The platform delivers the whole body again; the updates stored already
                # are recognised by their ids then.
                log.exception("could not store %s update %s", self.channel, update.update_id)
                return web.json_response({"error": "not stored, try again"}, status=503)
        return web.Response(body=self.answer, content_type=JSON)

    async def _read(self, request: web.Request) -> list[tuple[Update, str]]:
        self.credentials(request)
        if request.content_type != JSON:
            raise Refused(415, f"Content-Type must be {JSON}")
        try:
            raw = await read_body(request, self.max_bytes)
        except web.HTTPRequestEntityTooLarge:
            raise Refused(413, f"body larger than {self.max_bytes} bytes") from None
        await self.verify(request, raw)
        try:
            body = jsonlimits.loads(raw)
        except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError too
            raise Refused(400, f"body is not JSON: {exc}") from None
        try:
            updates = list(self.updates(body))
        except (ValueError, KeyError, TypeError) as exc:
            raise Refused(400, f"not a {self.channel} update: {exc}") from None
        found = []
        for update in updates:
            payload = stored_json(update.value)
            if payload is None:
                raise Refused(400, "body holds text that is not valid Unicode (a lone surrogate)")
            found.append((update, payload))
        return found
