"""`Store`: the whole contract, one implementation over either database.

Each domain's methods live in one query class (`ConversationQueries`, ...), and
each such class is also a port: a caller that only needs conversations asks for a
`ConversationQueries`, not the whole store. `SqliteStore` and `PostgresStore` add
only how a unit of work reaches its connection (see `gateway.store.sql`).
"""

from __future__ import annotations

from typing import Self

from gateway.errors import StoreError
from gateway.store.cards import CardQueries
from gateway.store.console import ConsoleQueries
from gateway.store.context import ContextQueries
from gateway.store.conversations import ConversationQueries
from gateway.store.deliveries import DeliveryQueries
from gateway.store.effect import EffectQueries
from gateway.store.languages import LanguageQueries
from gateway.store.memory import MemoryQueries
from gateway.store.notices import NoticeQueries
from gateway.store.personas import PersonaQueries
from gateway.store.privacy import PrivacyQueries
from gateway.store.proposals import ProposalQueries
from gateway.store.ratings import RatingQueries
from gateway.store.registry import RegistryQueries
from gateway.store.replicas import ReplicaQueries
from gateway.store.schedule import ScheduleQueries
from gateway.store.sql import Conn, query
from gateway.store.stats import StatsQueries
from gateway.store.synthesis import SynthesisQueries
from gateway.store.tools import ToolQueries
from gateway.store.turns import TurnQueries
from gateway.store.usage import UsageQueries


class Store(
    TurnQueries,
    RatingQueries,
    ConversationQueries,
    RegistryQueries,
    DeliveryQueries,
    ProposalQueries,
    SynthesisQueries,
    StatsQueries,
    EffectQueries,
    ConsoleQueries,
    CardQueries,
    NoticeQueries,
    UsageQueries,
    PrivacyQueries,
    LanguageQueries,
    MemoryQueries,
    ContextQueries,
    PersonaQueries,
    ToolQueries,
    ScheduleQueries,
    ReplicaQueries,  # with InboxQueries, which it extends
):
    """Every store method; opened by `SqliteStore` or `PostgresStore`."""

    @property
    def location(self) -> str:  # pragma: no cover - each backend says
        """Where the data lives, safe to print."""
        raise NotImplementedError

    async def open(self) -> Self:  # pragma: no cover - each backend opens its own way
        """Connect and apply pending migrations."""
        raise NotImplementedError

    async def close(self) -> None:  # pragma: no cover
        """Finish queued work and disconnect."""
        raise NotImplementedError

    async def checkpoint(self) -> None:
        """Leave no deleted row in a log beside the database (SQLite's WAL); the server's
        own log (PostgreSQL) is outside the data dir and recycled by the server."""

    async def __aenter__(self) -> Self:
        return await self.open()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def ping(self) -> bool:
        """True when the database answers a trivial query."""
        try:
            return bool(await self._select_one() == 1)
        except StoreError:
            return False

    @query
    async def _select_one(self, c: Conn) -> int:
        return int(await c.fetchval("select 1"))

    @query
    async def schema_versions(self, c: Conn) -> list[int]:
        """Migration versions recorded in the database."""
        rows = await c.fetch("select version from schema_migrations order by version")
        return [int(r["version"]) for r in rows]
