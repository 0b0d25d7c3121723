"""The gateway's events: what a component raises once its work is durable, and who is told.

A component is handed the one `Events` hub and publishes to it where its work ends: the
reviewer a `ReviewEvent` (staged, decided, switched), the synthesizer a `RunSummary` (a
pass finished), the toolbox a `ToolCalled`. Who listens is listed in one place, the
composition root (`runtime.assembly.subscribe`). Subscribers are told in the order they
subscribed and awaited one after the other; one that fails is logged and the others are
still told: what follows an event never undoes the work that raised it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from gateway.core.tools import ToolCallRecord

log = logging.getLogger(__name__)


class Event(Protocol):
    """Anything published: it says what it is about, for the log line of a failed subscriber."""

    @property
    def about(self) -> str: ...


E = TypeVar("E", bound=Event)
Subscriber = Callable[[E], Awaitable[None]]


@dataclass(frozen=True)
class ToolCalled:
    """A tool call ended (answered, refused, declined, timed out): as offered, and its record."""

    name: str
    record: ToolCallRecord

    @property
    def about(self) -> str:
        return f"the call of {self.name}"


class Events:
    """The hub: subscribers by the type of event they take."""

    def __init__(self) -> None:
        self._subscribers: dict[type[Any], list[Callable[[Any], Awaitable[None]]]] = {}

    def subscribe(self, kind: type[E], subscriber: Subscriber[E]) -> None:
        """Tell `subscriber` every event of type `kind`, after the ones subscribed before."""
        self._subscribers.setdefault(kind, []).append(subscriber)

    async def publish(self, event: Event) -> None:
        """Tell every subscriber of the event's type; a failing one is logged, never raised."""
        for subscriber in self._subscribers.get(type(event), ()):
            try:
                await subscriber(event)
            except Exception:
                log.exception("what follows %s failed", event.about)
