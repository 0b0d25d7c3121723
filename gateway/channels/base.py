"""The protocol every channel adapter implements, and the ports it is given when it starts.

What a platform says about itself is its `PlatformSpec` (`gateway.channels.spec`: apart
from this module, which imports aiohttp and the conversation layer, so that the CLI can
read every spec cheaply), exported once by its package's `spec` module.

A channel verifies and stores its platform's webhooks with a `Webhook`
(`gateway.channels.webhook`), which stores every update through `Intake.accept` (so an
update is on disk before the platform hears 200). Its handler (returned by
`start`) decodes stored updates into the conversation layer's models and renders
what the layer says through a `Responder` of its own. The inbox worker calls that
handler in order within a chat (the update's `chat_key`) and concurrently across chats.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from aiohttp import web

from gateway.conversation.dispatch import Conversation
from gateway.conversation.fence import Claims, FencedResponder
from gateway.conversation.models import Profile
from gateway.conversation.ports import Responder
from gateway.core.models import ChatRef
from gateway.core.ports import Meta
from gateway.core.records import InboxItem
from gateway.review.delivery import CardTransport


def storable(value: Any) -> bool:
    """False when JSON text holds escaped lone surrogates, which no database column can keep.

    Valid JSON may spell half of an emoji as "\\ud83d"; no platform sends that, and storing
    it would fail after the webhook had already been let through.
    """
    return stored_json(value) is not None


def stored_json(value: Any) -> str | None:
    """`value` as the compact JSON text the inbox keeps, or None when it is not `storable`."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return text


class Intake(Protocol):
    """The durable inbox, as a webhook sees it."""

    async def accept(self, channel: str, update_id: str, chat_key: str, payload: str) -> bool:
        """Store an update and queue it; False when it is a redelivery."""
        ...


class Batch(Protocol):
    """One stored batch of a delivery: its retry key, and what LINE accepted, once it did."""

    @property
    def retry_key(self) -> str: ...

    @property
    def sent_at(self) -> float | None: ...

    @property
    def platform_ids(self) -> list[str]: ...


INTAKE: web.AppKey[Intake] = web.AppKey("intake")
"""Where webhooks store what they accept; set by app.py before the server takes requests."""

Handler = Callable[[InboxItem], Awaitable[None]]
"""Handles one stored update; raises to have it retried."""


class DeliveryLog(Meta, Protocol):
    """What a channel remembers about its own deliveries (and in meta, what it needs next)."""

    async def set_platform_ids(self, message_id: int, ids: Sequence[str]) -> None: ...

    async def delivery_batch(
        self, channel: str, ref: str, batch: int, retry_key: str, now: float | None = None
    ) -> Batch: ...

    async def delivery_sent(
        self,
        channel: str,
        ref: str,
        batch: int,
        ids: Sequence[str],
        now: float | None = None,
        *,
        retry_key: str = "",
        answer: int | None = None,
        answer_ids: Sequence[str] = (),
    ) -> None: ...


class AnswerLog(DeliveryLog, Protocol):
    """Delivery records, and where an answer's ids go once its last message went out."""

    async def settle_platform_ids(self, message_id: int, ids: Sequence[str]) -> None:
        """`set_platform_ids` for the write after an answer's last message: where the inbox
        worker handles the update, written with the update's done (one write fewer per
        answer; if the attempt ends otherwise, written before it does); else now."""
        ...


@dataclass(frozen=True)
class Ports:
    """What a running channel uses: the inbox, its conversation, its delivery records, and
    the inbox's claims, which every reply made for a stored update is fenced by."""

    intake: Intake
    conversation: Conversation
    deliveries: AnswerLog
    claims: Claims

    def fenced(self, out: Responder, item: InboxItem) -> Responder:
        """`out`, saying nothing more once this process no longer holds `item`'s claim."""
        return FencedResponder(out, self.claims, item)


class Channel(ABC):
    """A platform adapter."""

    name: ClassVar[str]
    profile: Profile
    """Its words, its users and admins, its card signer: for the conversation layer."""

    def routes(self) -> list[web.RouteDef]:
        """HTTP routes this channel serves (its webhook)."""
        return []

    @abstractmethod
    async def start(self, ports: Ports) -> Handler:
        """Open clients with the ports given; returns the handler of this channel's updates.

        Called before the inbox worker resumes stored updates, which go to that handler.
        """

    async def stop(self) -> None:
        """Close clients; called after the inbox worker stopped."""
        return None

    def health(self) -> dict[str, Any]:
        """Channel details for /healthz."""
        return {"configured": True}

    def card_transport(self) -> CardTransport | None:
        """How this channel shows proposal cards to its admins, if it can; after `start`."""
        return None

    def task_responder(self, chat: ChatRef, ref: str) -> Responder | None:
        """Replies in `chat` with no message to answer (an agent task's answer), after
        `start`; `ref` is the same on every attempt at one occurrence. None: it cannot."""
        return None
