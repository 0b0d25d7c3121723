"""What every PostgreSQL query mixin may rely on: a pool, error mapping, row helpers."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import asyncpg

from gateway.errors import StoreBusy, StoreError

_RETRYABLE: tuple[type[BaseException], ...] = (
    asyncpg.exceptions.SerializationError,
    asyncpg.exceptions.DeadlockDetectedError,
    asyncpg.exceptions.LockNotAvailableError,
    asyncpg.exceptions.TooManyConnectionsError,
    asyncpg.exceptions.CannotConnectNowError,
    asyncpg.exceptions.ConnectionDoesNotExistError,
    asyncpg.exceptions.AdminShutdownError,
    asyncpg.exceptions.QueryCanceledError,
    asyncpg.exceptions.InterfaceError,
    ConnectionError,
    TimeoutError,
    OSError,
)


@contextlib.contextmanager
def database_errors() -> Iterator[None]:
    """Map driver errors onto the store's: StoreBusy when trying again can help."""
    try:
        yield
    except StoreError:
        raise
    except _RETRYABLE as exc:
        raise StoreBusy(f"database is busy or unreachable: {type(exc).__name__}: {exc}") from exc
    except asyncpg.PostgresError as exc:
        raise StoreError(f"database error: {type(exc).__name__}: {exc}") from exc


def affected(status: str) -> int:
    """Rows touched, from a command status such as "UPDATE 3" or "INSERT 0 1"."""
    tail = status.rsplit(" ", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def as_dict(row: asyncpg.Record | None) -> dict[str, Any] | None:
    return None if row is None else dict(row)


class PgQueriesBase:
    """Declares the pool the PostgresStore opens, with small query helpers over it."""

    _pool: asyncpg.Pool | None = None

    def _require_pool(self) -> asyncpg.Pool:
        if self._pool is None:
            raise StoreError("store is not open")
        return self._pool

    async def _fetch(self, sql: str, *args: Any) -> list[dict[str, Any]]:
        with database_errors():
            return [dict(r) for r in await self._require_pool().fetch(sql, *args)]

    async def _fetchrow(self, sql: str, *args: Any) -> dict[str, Any] | None:
        with database_errors():
            return as_dict(await self._require_pool().fetchrow(sql, *args))

    async def _fetchval(self, sql: str, *args: Any) -> Any:
        with database_errors():
            return await self._require_pool().fetchval(sql, *args)

    async def _execute(self, sql: str, *args: Any) -> int:
        """Run one statement; returns the rows it touched."""
        with database_errors():
            return affected(await self._require_pool().execute(sql, *args))

    @contextlib.asynccontextmanager
    async def _tx(self) -> AsyncIterator[asyncpg.Connection]:
        """One connection inside one transaction, committed when the block ends."""
        with database_errors():
            async with self._require_pool().acquire() as conn, conn.transaction():
                yield conn
