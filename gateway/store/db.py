"""The Store: one SQLite connection, used only from one dedicated worker thread.

Every call goes through `await store.run(fn)`, so sqlite never blocks the event
loop and never sees two threads (see datasette). Domain methods live in the
query mixins; callers never write SQL.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from sqlite_utils import Database

from gateway.errors import StoreBusy, StoreError
from gateway.store.cards import CardQueries
from gateway.store.console import ConsoleQueries
from gateway.store.conversations import ConversationQueries
from gateway.store.deliveries import DeliveryQueries
from gateway.store.effect import EffectQueries
from gateway.store.inbox import InboxQueries
from gateway.store.migrations import migrate
from gateway.store.proposals import ProposalQueries
from gateway.store.registry import RegistryQueries
from gateway.store.replicas import ReplicaQueries
from gateway.store.stats import StatsQueries
from gateway.store.synthesis import SynthesisQueries

T = TypeVar("T")


class SqliteStore(
    InboxQueries,
    ConversationQueries,
    RegistryQueries,
    DeliveryQueries,
    ProposalQueries,
    SynthesisQueries,
    StatsQueries,
    EffectQueries,
    ConsoleQueries,
    CardQueries,
    ReplicaQueries,
):
    """SQLite (WAL) in the data dir, migrated on open."""

    def __init__(self, path: Path | str, *, busy_timeout: float = 10.0) -> None:
        self.path = Path(path)
        self._busy_timeout = busy_timeout
        self._executor: ThreadPoolExecutor | None = None
        self._db: Database | None = None

    @property
    def location(self) -> str:
        """Where the data lives, safe to print."""
        return str(self.path)

    async def open(self) -> SqliteStore:
        """Connect, switch to WAL and apply pending migrations."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="store")
        loop = asyncio.get_running_loop()
        try:
            self._db = await loop.run_in_executor(self._executor, self._connect)
        except BaseException:
            self._executor.shutdown(wait=False)
            self._executor = None
            raise
        return self

    def _connect(self) -> Database:
        try:
            conn = sqlite3.connect(self.path, timeout=self._busy_timeout, check_same_thread=False)
            db = Database(conn)
            if db.journal_mode != "wal":
                db.enable_wal()
            db.execute("pragma foreign_keys = on")
            db.execute("pragma synchronous = normal")
            migrate(db)
            return db
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open database {self.path}: {exc}") from exc

    async def close(self) -> None:
        """Finish queued work, then close the connection and the thread."""
        if self._executor is None:
            return
        db, executor = self._db, self._executor
        self._db, self._executor = None, None
        loop = asyncio.get_running_loop()
        if db is not None:
            await loop.run_in_executor(executor, db.close)
        executor.shutdown(wait=True)

    async def __aenter__(self) -> SqliteStore:
        return await self.open()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def run(self, fn: Callable[[Database], T]) -> T:
        """Run `fn(db)` on the store thread and return its result."""
        if self._executor is None or self._db is None:
            raise StoreError("store is not open")
        db = self._db

        def call() -> T:
            try:
                return fn(db)
            except sqlite3.OperationalError as exc:
                if _busy(exc):
                    raise StoreBusy(f"database is busy: {exc}") from exc
                raise StoreError(f"database error: {exc}") from exc
            except sqlite3.Error as exc:
                raise StoreError(f"database error: {exc}") from exc

        return await asyncio.get_running_loop().run_in_executor(self._executor, call)

    async def ping(self) -> bool:
        """True when the database answers a trivial query."""
        try:
            return await self.run(lambda db: db.execute("select 1").fetchone()[0] == 1)
        except StoreError:
            return False

    async def schema_versions(self) -> list[int]:
        """Migration versions recorded in the database."""
        return await self.run(
            lambda db: [r["version"] for r in db.query("select version from schema_migrations")]
        )


def _busy(exc: sqlite3.OperationalError) -> bool:
    """SQLITE_BUSY or SQLITE_LOCKED: another connection holds the lock; trying again helps."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return "locked" in str(exc) or "busy" in str(exc)
