"""The store on PostgreSQL: an asyncpg pool, migrated on open.

Selected by `SKILLGATE_DATABASE_URL=postgresql://...` (see `gateway.store.open_store`).
The methods are the same code as on SQLite (`gateway.store.sql`); this module is
what differs: a unit of work borrows a pooled connection, `?` marks become `$n`,
rows can be locked (`for update skip locked`) and writers of one thing queue on
advisory locks. That is what lets several replicas share one database: the inbox
is claimed row by row, locks are lease rows, and every decision is a conditional
update that only one writer can win.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import re
import zlib
from collections import deque
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from typing import Any, TypeVar

import asyncpg

from gateway.errors import StoreBusy, StoreError
from gateway.store.base import Store
from gateway.store.migrations import MIGRATIONS, Migration, apply
from gateway.store.sql import Work

T = TypeVar("T")

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
    asyncpg.exceptions.InternalClientError,  # a connection the server ended, not yet seen closed
    ConnectionError,
    TimeoutError,
    OSError,
)

_LOCKS = 0x5E55
"""First key of the named advisory locks (the two-key space, apart from the migration lock)."""
_MIGRATION_LOCK = 0x5EC1_6A7E
"""pg_advisory_xact_lock key: replicas starting together migrate one after another."""


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


def redact_url(url: str) -> str:
    """The URL with any password replaced, for messages and logs."""
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest:
        return url
    credentials, _, host = rest.rpartition("@")
    user = credentials.split(":", 1)[0]
    return f"{scheme}://{user}:***@{host}" if ":" in credentials else url


_MARK_OR_LITERAL = re.compile(r"'(?:[^']|'')*'|\?")


@functools.lru_cache(maxsize=2048)
def numbered(sql: str) -> str:
    """The statement with `?` marks (outside string literals) numbered `$1, $2, ...`."""
    counter = iter(range(1, sql.count("?") + 1))
    return _MARK_OR_LITERAL.sub(
        lambda m: f"${next(counter)}" if m.group() == "?" else m.group(), sql
    )


def affected(status: str) -> int:
    """Rows touched, from a command status such as "UPDATE 3" or "INSERT 0 1"."""
    tail = status.rsplit(" ", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def lock_key(key: str) -> int:
    """The second key of the named advisory lock `key` (the lock takes an int4)."""
    digest = zlib.crc32(key.encode())
    return digest if digest < 1 << 31 else digest - (1 << 32)


class PgDialect:
    name = "postgresql"
    for_update = "for update"
    skip_locked = "for update skip locked"

    snapshot = "set transaction isolation level repeatable read, read only"
    writable_cte = True

    def lock_item(self, key: str) -> tuple[str, tuple[int, int]]:
        return "pg_advisory_xact_lock(?, ?) as locked", (_LOCKS, lock_key(key))

    def json_elements(self, expr: str, alias: str) -> str:
        return f"jsonb_array_elements_text(({expr})::jsonb) as {alias} (value)"

    def json_text(self, expr: str, key: str) -> str:
        return f"(({expr})::jsonb ->> '{key}')"

    def json_list(self, column: str, source: str, order: str) -> str:
        return f"(select coalesce(json_agg({column} order by {order}), '[]')::text {source})"

    def limit(self, n: int) -> int | None:
        return None if n < 0 else int(n)  # PostgreSQL refuses a negative limit


DIALECT = PgDialect()


class PgConn:
    """The Conn of `gateway.store.sql` over one asyncpg connection."""

    def __init__(self, conn: asyncpg.Connection) -> None:
        self.conn = conn

    @property
    def dialect(self) -> PgDialect:
        return DIALECT

    async def fetch(self, sql: str, *args: Any) -> list[dict[str, Any]]:
        return [dict(r) for r in await self.conn.fetch(numbered(sql), *args)]

    async def fetchrow(self, sql: str, *args: Any) -> dict[str, Any] | None:
        row = await self.conn.fetchrow(numbered(sql), *args)
        return None if row is None else dict(row)

    async def fetchval(self, sql: str, *args: Any) -> Any:
        return await self.conn.fetchval(numbered(sql), *args)

    async def execute(self, sql: str, *args: Any) -> int:
        return affected(await self.conn.execute(numbered(sql), *args))

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        await self.conn.executemany(numbered(sql), rows)

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        async with self.conn.transaction():
            yield

    async def lock(self, key: str) -> None:
        await self.conn.execute("select pg_advisory_xact_lock($1, $2)", _LOCKS, lock_key(key))


async def keep_session(conn: asyncpg.Connection) -> None:
    """A connection back in the pool needs no reset beyond asyncpg's own rollback.

    The store keeps no session state: its locks and settings last a transaction. The default
    reset (unlock all, close cursors, unlisten, reset all) would be one more round trip, and
    the server's CPU, on every release: several per answer.
    """


async def migrate(conn: asyncpg.Connection, migrations: list[Migration] | None = None) -> list[int]:
    """Apply every migration not yet recorded, one replica at a time."""
    async with conn.transaction():
        await conn.execute("select pg_advisory_xact_lock($1)", _MIGRATION_LOCK)
        return await apply(PgConn(conn), MIGRATIONS if migrations is None else migrations)


def _spent(conn: asyncpg.Connection) -> bool:
    """Closed, in a transaction left open, or taken back by the pool already (asyncpg does
    that to a connection the server ended): not one to hand to the next unit."""
    try:
        return bool(conn.is_closed() or conn.is_in_transaction())
    except asyncpg.InterfaceError:  # released: its proxy refuses every call
        return True


class PostgresStore(Store):
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
        self._urgent: asyncpg.Pool | None = None
        """Two connections for `@urgent` methods, apart from the handlers' pool."""
        self._kept: list[asyncpg.Connection] = []
        """Connections of the pool that came back clean, held for the next unit of work."""
        self._out = 0
        """Connections taken from the pool: in use, kept, or promised to a waiting unit."""
        self._waiters: deque[asyncio.Future[asyncpg.Connection | None]] = deque()
        """Units waiting while every connection is out, first come first served."""
        self._closing = False

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
                reset=keep_session,
            )
            async with self._pool.acquire() as conn:
                await migrate(conn)
            self._urgent = await asyncpg.create_pool(
                self.url,
                min_size=1,
                max_size=2,
                timeout=self._connect_timeout,
                server_settings=settings,
                reset=keep_session,
            )
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
        self._closing = True  # units still running give their connections back
        kept, self._kept = self._kept, []
        if self._pool is not None:
            for conn in kept:
                await self._pool.release(conn)
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_exception(StoreError("store is closed"))
        for pool in (self._urgent, self._pool):
            if pool is not None:
                await pool.close()
        self._pool = self._urgent = None
        self._out, self._closing = 0, False

    @contextlib.asynccontextmanager
    async def connection(self) -> AsyncIterator[asyncpg.Connection]:
        """One pooled connection, with driver errors mapped (bulk copies, tests).

        The pool's acquire and release are several tasks and futures each, a fifth of the
        store's CPU on an answer of five units; a connection that finished its unit cleanly
        (no open transaction, not closed) needs nothing of what release does, so it goes
        straight to the next unit: one waiting for a connection (every one of the pool's is
        out), or the next to come (it is kept, at most the pool's size of them). A unit that
        fails hands its connection back for the pool to reset or replace, and its place to
        the first unit waiting.
        """
        pool = self._pool
        if pool is None or self._closing:
            raise StoreError("store is not open")
        with database_errors():
            conn = await self._borrow(pool)
            try:
                yield conn
            except BaseException:
                await self._release(pool, conn)
                raise
            if _spent(conn):
                await self._release(pool, conn)
            else:
                await self._hand_on(pool, conn)

    async def _borrow(self, pool: asyncpg.Pool) -> asyncpg.Connection:
        while self._kept:
            conn = self._kept.pop()
            if not _spent(conn):
                return conn
            await self._release(pool, conn)  # (a no-op for the pool where it took it back)
        if self._out >= self._max_size:
            waiter: asyncio.Future[asyncpg.Connection | None]
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                handed = await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():  # handed over, then cancelled
                    got = waiter.result()
                    if got is None:
                        self._out -= 1
                        self._make_room()
                    else:
                        await self._hand_on(pool, got)
                raise
            if handed is not None:
                return handed
            # None: a connection went back to the pool and its place was kept for this unit.
        else:
            self._out += 1
        try:
            return await pool.acquire()
        except BaseException:
            self._out -= 1
            self._make_room()
            raise

    async def _hand_on(self, pool: asyncpg.Pool, conn: asyncpg.Connection) -> None:
        """A connection that finished its unit cleanly: to the first unit waiting, or kept."""
        if self._closing or self._pool is not pool:
            await self._release(pool, conn)
            return
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():  # a cancelled waiter is done
                waiter.set_result(conn)
                return
        self._kept.append(conn)

    async def _release(self, pool: asyncpg.Pool, conn: asyncpg.Connection) -> None:
        """Back to the pool (which resets or replaces it); its place goes to a waiting unit."""
        try:
            await pool.release(conn)
        finally:
            self._out -= 1
            self._make_room()

    def _make_room(self) -> None:
        """The pool has room for one more: the first unit waiting takes it (from the pool)."""
        while self._waiters and self._out < self._max_size:
            waiter = self._waiters.popleft()
            if not waiter.done():
                self._out += 1  # promised now: a unit arriving meanwhile waits its turn
                waiter.set_result(None)
                return

    async def _run(self, work: Work[T], *, transaction: bool, urgent: bool = False) -> T:
        if urgent and self._urgent is not None:
            with database_errors():
                async with self._urgent.acquire() as conn:
                    return await work(PgConn(conn))
        async with self.connection() as conn:
            if transaction:
                async with conn.transaction():
                    return await work(PgConn(conn))
            return await work(PgConn(conn))
