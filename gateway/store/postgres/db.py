"""The Store on PostgreSQL: an asyncpg pool, migrated on open.

Selected by `SKILLGATE_DATABASE_URL=postgresql://...` (see `gateway.store.open_store`).
It offers the same methods as the SQLite `Store`, each written for PostgreSQL in
the query mixins beside this file, and is what lets several replicas share one
database: the inbox is claimed row by row (`inbox_claim`), locks are lease rows,
and every decision is a conditional update that only one writer can win.
"""

from __future__ import annotations

import asyncpg

from gateway.errors import StoreError
from gateway.store.postgres.cards import PgCardQueries
from gateway.store.postgres.console import PgConsoleQueries
from gateway.store.postgres.conversations import PgConversationQueries
from gateway.store.postgres.deliveries import PgDeliveryQueries
from gateway.store.postgres.effect import PgEffectQueries
from gateway.store.postgres.inbox import PgInboxQueries
from gateway.store.postgres.migrations import migrate
from gateway.store.postgres.proposals import PgProposalQueries
from gateway.store.postgres.registry import PgRegistryQueries
from gateway.store.postgres.replicas import PgReplicaQueries
from gateway.store.postgres.stats import PgStatsQueries
from gateway.store.postgres.synthesis import PgSynthesisQueries


def redact_url(url: str) -> str:
    """The URL with any password replaced, for messages and logs."""
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest:
        return url
    credentials, _, host = rest.rpartition("@")
    user = credentials.split(":", 1)[0]
    return f"{scheme}://{user}:***@{host}" if ":" in credentials else url


class PostgresStore(
    PgInboxQueries,
    PgConversationQueries,
    PgRegistryQueries,
    PgDeliveryQueries,
    PgProposalQueries,
    PgSynthesisQueries,
    PgStatsQueries,
    PgEffectQueries,
    PgConsoleQueries,
    PgCardQueries,
    PgReplicaQueries,
):
    """PostgreSQL through an asyncpg pool; `schema` picks a schema other than public."""

    def __init__(
        self,
        url: str,
        *,
        schema: str | None = None,
        min_size: int = 1,
        max_size: int = 10,
        connect_timeout: float = 10.0,
    ) -> None:
        self.url = url
        self.schema = schema
        self._min_size = min_size
        self._max_size = max_size
        self._connect_timeout = connect_timeout
        self._pool: asyncpg.Pool | None = None

    @property
    def location(self) -> str:
        """Where the data lives, safe to print."""
        where = redact_url(self.url)
        return f"{where} (schema {self.schema})" if self.schema else where

    async def open(self) -> PostgresStore:
        """Connect and apply pending migrations (one replica at a time)."""
        settings = {"search_path": self.schema} if self.schema else None
        try:
            self._pool = await asyncpg.create_pool(
                self.url,
                min_size=self._min_size,
                max_size=self._max_size,
                timeout=self._connect_timeout,
                server_settings=settings,
            )
            async with self._pool.acquire() as conn:
                await migrate(conn)
        except (asyncpg.PostgresError, OSError, asyncpg.InterfaceError, TimeoutError) as exc:
            await self.close()
            raise StoreError(
                f"cannot open database {self.location}: {type(exc).__name__}: {exc}"
            ) from exc
        except ValueError as exc:  # a malformed URL
            await self.close()
            raise StoreError(f"cannot open database {self.location}: {exc}") from exc
        return self

    async def close(self) -> None:
        """Wait for borrowed connections, then close the pool."""
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    async def __aenter__(self) -> PostgresStore:
        return await self.open()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def ping(self) -> bool:
        """True when the database answers a trivial query."""
        try:
            return bool(await self._fetchval("select 1") == 1)
        except StoreError:
            return False

    async def schema_versions(self) -> list[int]:
        """Migration versions recorded in the database."""
        rows = await self._fetch("select version from schema_migrations order by version")
        return [int(r["version"]) for r in rows]
