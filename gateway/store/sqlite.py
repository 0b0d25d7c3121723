"""The store on SQLite: one connection, used only from one dedicated worker thread.

A unit of work (a store method's body) runs whole on the store thread, so sqlite
never blocks the event loop and never sees two threads (see datasette). Its
coroutine is driven there to the end without an event loop: the connection's
methods do their work at once and never suspend, so one unit runs after another
and a transaction needs no lock. One process owns the file; several replicas need
PostgreSQL.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from sqlite_utils import Database

from gateway.errors import StoreBusy, StoreError
from gateway.store.base import Store
from gateway.store.migrations import MIGRATIONS, Migration, apply
from gateway.store.sql import Work

T = TypeVar("T")

MIN_VERSION = (3, 35, 0)
"""`returning` and `update ... from` arrived in SQLite 3.35."""


class SqliteDialect:
    name = "sqlite"
    for_update = ""  # one writer at a time: the transaction already excludes the others
    skip_locked = ""

    snapshot = ""  # a transaction here sees one snapshot: no other writer runs meanwhile

    def json_elements(self, expr: str, alias: str) -> str:
        return f"json_each({expr}) as {alias}"

    def limit(self, n: int) -> int | None:
        return int(n)  # SQLite reads a negative limit as none


DIALECT = SqliteDialect()


class SqliteConn:
    """The Conn of `gateway.store.sql` over one sqlite-utils Database, on its thread."""

    def __init__(self, db: Database) -> None:
        self.db = db  # statements go to its sqlite3 connection, which is in autocommit mode

    @property
    def dialect(self) -> SqliteDialect:
        return DIALECT

    async def fetch(self, sql: str, *args: Any) -> list[dict[str, Any]]:
        cursor = self.db.conn.execute(sql, args)
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    async def fetchrow(self, sql: str, *args: Any) -> dict[str, Any] | None:
        cursor = self.db.conn.execute(sql, args)
        try:
            row = cursor.fetchone()
            if row is None:
                return None
            return dict(zip([d[0] for d in cursor.description], row, strict=True))
        finally:
            cursor.close()  # a statement left half-read would hold its lock

    async def fetchval(self, sql: str, *args: Any) -> Any:
        cursor = self.db.conn.execute(sql, args)
        try:
            row = cursor.fetchone()
            return None if row is None else row[0]
        finally:
            cursor.close()

    async def execute(self, sql: str, *args: Any) -> int:
        return int(self.db.conn.execute(sql, args).rowcount)

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        self.db.conn.executemany(sql, rows)

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        with self.db.atomic():
            yield

    async def lock(self, key: str) -> None:
        """Nothing to do: units of work never overlap on the one store thread."""


def drive(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine that never suspends to its end, here, without an event loop."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    coro.close()
    raise RuntimeError("a store method awaited something other than its SQLite connection")


def migrate(db: Database, migrations: list[Migration] | None = None) -> list[int]:
    """Apply every migration not yet recorded; returns the versions applied now."""
    return drive(apply(SqliteConn(db), MIGRATIONS if migrations is None else migrations))


class SqliteStore(Store):
    """SQLite (WAL) in the data dir, migrated on open."""

    def __init__(self, path: Path | str, *, busy_timeout: float = 10.0) -> None:
        self.path = Path(path)
        self._busy_timeout = busy_timeout
        self._executor: ThreadPoolExecutor | None = None
        self._db: Database | None = None
        self._conn: SqliteConn | None = None

    @property
    def location(self) -> str:
        """Where the data lives, safe to print."""
        return str(self.path)

    async def open(self) -> SqliteStore:
        """Connect, switch to WAL and apply pending migrations."""
        if sqlite3.sqlite_version_info < MIN_VERSION:
            raise StoreError(
                f"SQLite {sqlite3.sqlite_version} is too old: Skillgate needs"
                f" {'.'.join(map(str, MIN_VERSION))} or newer"
            )
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # conversations
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="store")
        loop = asyncio.get_running_loop()
        try:
            self._db = await loop.run_in_executor(self._executor, self._connect)
        except BaseException:
            self._executor.shutdown(wait=False)
            self._executor = None
            raise
        self._conn = SqliteConn(self._db)
        return self

    def _connect(self) -> Database:
        try:
            # Autocommit: a statement outside `atomic()` commits at once, `returning` or not.
            conn = sqlite3.connect(
                self.path,
                timeout=self._busy_timeout,
                check_same_thread=False,
                isolation_level=None,
            )
            db = Database(conn)
            if db.journal_mode != "wal":
                db.enable_wal()
            db.execute("pragma foreign_keys = on")
            db.execute("pragma synchronous = normal")
            # Deleted rows (retention, a forgotten user) are overwritten, not left in free pages.
            db.execute("pragma secure_delete = on")
            migrate(db)
            return db
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open database {self.path}: {exc}") from exc

    async def close(self) -> None:
        """Finish queued work, then close the connection and the thread."""
        if self._executor is None:
            return
        db, executor = self._db, self._executor
        self._db, self._executor, self._conn = None, None, None
        loop = asyncio.get_running_loop()
        if db is not None:
            await loop.run_in_executor(executor, db.close)
        executor.shutdown(wait=True)

    async def run(self, fn: Callable[[Database], T]) -> T:
        """Run `fn(db)` on the store thread: raw sqlite-utils access (backups, tests)."""
        return await self._on_thread(lambda conn: fn(conn.db))

    async def _run(self, work: Work[T], *, transaction: bool, urgent: bool = False) -> T:
        # `urgent` changes nothing here: one thread, and one process owns the file.
        if transaction:

            def unit(conn: SqliteConn) -> T:
                with conn.db.atomic():
                    return drive(work(conn))

            return await self._on_thread(unit)
        return await self._on_thread(lambda conn: drive(work(conn)))

    async def _on_thread(self, fn: Callable[[SqliteConn], T]) -> T:
        conn = self._conn
        if self._executor is None or conn is None:
            raise StoreError("store is not open")

        def call() -> T:
            try:
                return fn(conn)
            except sqlite3.OperationalError as exc:
                if _busy(exc):
                    raise StoreBusy(f"database is busy: {exc}") from exc
                raise StoreError(f"database error: {exc}") from exc
            except sqlite3.Error as exc:
                raise StoreError(f"database error: {exc}") from exc

        return await asyncio.get_running_loop().run_in_executor(self._executor, call)


def _busy(exc: sqlite3.OperationalError) -> bool:
    """SQLITE_BUSY or SQLITE_LOCKED: another connection holds the lock; trying again helps."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return "locked" in str(exc) or "busy" in str(exc)
