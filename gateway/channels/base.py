"""The protocol every channel adapter implements, and the turn they all share.

A channel verifies and stores its platform's webhooks through `Services.accept`
(so an update is on disk before the platform hears 200), decodes stored
updates in `process`, and renders replies in `send`. The inbox worker calls
`process` in order within a chat (the update's `chat_key`) and concurrently
across chats.
"""

from __future__ import annotations

import json
import logging
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from aiohttp import web

from gateway.core.agent import Agent
from gateway.core.models import ChatRef, IncomingMessage, Reply
from gateway.core.records import InboxItem
from gateway.metrics import Metrics

if TYPE_CHECKING:
    from gateway.config import Settings
    from gateway.inbox import InboxWorker
    from gateway.review.cards import CardTransport, ReviewCards
    from gateway.skills.catalog import SkillCatalog
    from gateway.skills.review import Reviewer
    from gateway.skills.synthesizer import Synthesizer
    from gateway.store import Store

log = logging.getLogger(__name__)


def storable(value: Any) -> bool:
    """False when JSON text holds escaped lone surrogates, which no database column can keep.

    Valid JSON may spell half of an emoji as "\\ud83d"; no platform sends that, and storing
    it would fail after the webhook had already been let through.
    """
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@dataclass
class Services:
    """What channels may use; built once by the app."""

    settings: Settings
    store: Store
    agent: Agent
    catalog: SkillCatalog
    worker: InboxWorker
    review: Reviewer
    synthesizer: Synthesizer
    metrics: Metrics = field(default_factory=Metrics)
    cards: ReviewCards | None = None
    """Proposal cards for chat admins, once the channels have started (None without admins)."""

    async def accept(self, channel: str, update_id: str, chat_key: str, payload: str) -> bool:
        """Store an update durably and queue it; False when it is a redelivery."""
        item = await self.store.inbox_add(channel, update_id, chat_key, payload)
        if item is None:
            return False
        self.metrics.updates_received.labels(channel).inc()
        self.worker.submit(item)
        return True


class Channel(ABC):
    """A platform adapter."""

    name: ClassVar[str]

    def __init__(self, settings: Settings) -> None:
        # Routes are fixed when the app is built; services exist once it starts.
        self.settings = settings
        self._services: Services | None = None

    @property
    def services(self) -> Services:
        if self._services is None:
            raise RuntimeError(f"{self.name} channel used before the app started")
        return self._services

    def bind(self, services: Services) -> None:
        """Give the channel the running services; the app calls this before `start`."""
        self._services = services

    def routes(self) -> list[web.RouteDef]:
        """HTTP routes this channel serves (its webhook)."""
        return []

    async def start(self) -> None:
        """Open clients; called before the inbox worker resumes stored updates."""
        return None

    async def stop(self) -> None:
        """Close clients; called after the inbox worker stopped."""
        return None

    def health(self) -> dict[str, Any]:
        """Channel details for /healthz."""
        return {"configured": True}

    def card_transport(self) -> CardTransport | None:
        """How this channel shows proposal cards to its admins, if it can; after `start`."""
        return None

    @abstractmethod
    async def process(self, item: InboxItem) -> None:
        """Handle one stored update; raise to have it retried."""

    @abstractmethod
    async def send(self, chat: ChatRef, reply: Reply) -> list[str]:
        """Deliver a reply (with its buttons); returns the platform message ids."""

    async def answer(self, incoming: IncomingMessage) -> Reply:
        """The shared turn: ask the agent, deliver once, remember what carried it."""
        started = time.monotonic()
        reply = await self.services.agent.respond(incoming)
        if reply.delivered_ids:
            log.info(
                "answer %s was delivered before a restart; not sending again", reply.message_id
            )
            return reply
        ids = await self.send(incoming.chat, reply)
        if reply.message_id is not None:
            await self.services.store.set_platform_ids(reply.message_id, ids)
        reply.delivered_ids = ids
        await self._count(reply, time.monotonic() - started)
        return reply

    async def _count(self, reply: Reply, seconds: float) -> None:
        """Metrics for a delivered answer; its trace says whether the model failed."""
        trace = None
        if reply.message_id is not None:
            trace = await self.services.store.get_trace(reply.message_id)
        failed = trace is not None and not trace.completed
        self.services.metrics.answered(self.name, reply.kind, seconds, model_failed=failed)
