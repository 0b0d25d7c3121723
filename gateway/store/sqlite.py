"""The store on SQLite: one connection, used only from one dedicated worker thread.

A unit of work (a store method's body) runs whole on the store thread, so sqlite
never blocks the event loop and never sees two threads (see datasette). Its
coroutine is driven there to the end without an event loop: the connection's
methods do their work at once and never suspend, so one unit runs after another
and a transaction needs no lock. Units queued together commit together (group
commit, see `SqliteStore`). One process owns the file; several replicas need
PostgreSQL.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import sqlite3
import sys
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from gateway.errors import StoreBusy, StoreError
from gateway.store.base import Store
from gateway.store.migrations import MIGRATIONS, Migration, apply
from gateway.store.sql import Work


@contextlib.contextmanager
def _unimportable(*names: str) -> Iterator[None]:
    """While the block runs, `import NAME` raises ImportError for each of `names` not yet
    imported (a None in `sys.modules` means exactly that), then they are importable again."""
    blocked = [n for n in names if n not in sys.modules]
    for name in blocked:
        sys.modules[name] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        for name in blocked:
            if sys.modules.get(name, 0) is None:
                del sys.modules[name]


# sqlite-utils imports numpy and pandas whenever they are installed, only to map their
# scalar types to column types; the store never hands it either. numpy is installed with
# the speech extras (soundfile) and would cost every gateway 15 MB resident and a tenth of a
# second of start-up; whoever needs it later (speech) imports it then.
with _unimportable("numpy", "pandas"):
    from sqlite_utils import Database

T = TypeVar("T")

MIN_VERSION = (3, 35, 0)
"""`returning` and `update ... from` arrived in SQLite 3.35."""

STATEMENT_CACHE = 512
"""Prepared statements the connection keeps: more than the store has distinct ones."""


class SqliteDialect:
    name = "sqlite"
    for_update = ""  # one writer at a time: the transaction already excludes the others
    skip_locked = ""

    snapshot = ""  # a transaction here sees one snapshot: no other writer runs meanwhile
    writable_cte = False

    def lock_item(self, key: str) -> None:
        return None  # units of work never overlap on the one store thread

    def json_elements(self, expr: str, alias: str) -> str:
        return f"json_each({expr}) as {alias}"

    def json_text(self, expr: str, key: str) -> str:
        return f"json_extract({expr}, '$.{key}')"

    def json_list(self, column: str, source: str, order: str) -> str:
        # The aggregate takes the rows as the ordered subquery gives them (SQLite 3.40 has
        # no `order by` inside an aggregate's call).
        ordered = f"select {column} {source} order by {order}"
        return f"(select json_group_array({column}) from ({ordered}))"

    def limit(self, n: int) -> int | None:
        return int(n)  # SQLite reads a negative limit as none


DIALECT = SqliteDialect()


class SqliteConn:
    """The Conn of `gateway.store.sql` over one sqlite-utils Database, on its thread.

    Statements go straight to the `sqlite3` connection, which is in autocommit mode and
    keeps each distinct statement prepared (its statement cache): nothing is looked up
    or rebuilt per call. Transactions and savepoints have fixed names for the same reason.
    """

    def __init__(self, db: Database) -> None:
        self.db = db
        self.sql = db.conn
        self._depth = 0

    @property
    def dialect(self) -> SqliteDialect:
        return DIALECT

    async def fetch(self, sql: str, *args: Any) -> list[dict[str, Any]]:
        cursor = self.sql.execute(sql, args)
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    async def fetchrow(self, sql: str, *args: Any) -> dict[str, Any] | None:
        cursor = self.sql.execute(sql, args)
        try:
            row = cursor.fetchone()
            if row is None:
                return None
            return dict(zip([d[0] for d in cursor.description], row, strict=True))
        finally:
            cursor.close()  # a statement left half-read would hold its lock

    async def fetchval(self, sql: str, *args: Any) -> Any:
        cursor = self.sql.execute(sql, args)
        try:
            row = cursor.fetchone()
            return None if row is None else row[0]
        finally:
            cursor.close()

    async def execute(self, sql: str, *args: Any) -> int:
        return int(self.sql.execute(sql, args).rowcount)

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        self.sql.executemany(sql, rows)

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        with self.atomic():
            yield

    @contextlib.contextmanager
    def atomic(self) -> Iterator[None]:
        """A transaction, or a savepoint inside the one already open."""
        if not self.sql.in_transaction:
            self.sql.execute("begin")
            try:
                yield
            except BaseException:
                if self.sql.in_transaction:
                    self.sql.execute("rollback")
                raise
            self.sql.execute("commit")
            return
        self._depth += 1
        name = f"sp{self._depth}"
        self.sql.execute(f"savepoint {name}")
        try:
            yield
        except BaseException:
            # Some errors (a full disk, an I/O error) end the whole transaction themselves.
            if self.sql.in_transaction:
                self.sql.execute(f"rollback to {name}")
                self.sql.execute(f"release {name}")
            raise
        else:
            self.sql.execute(f"release {name}")
        finally:
            self._depth -= 1

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


GROUP_MAX = 64
"""Most units of work in one group commit."""


@dataclass(slots=True)
class _Job:
    """One unit of work waiting for the store thread, and where its outcome goes."""

    fn: Callable[[SqliteConn], Any]
    future: asyncio.Future[Any]
    loop: asyncio.AbstractEventLoop
    grouped: bool
    """False for raw access and closing: those run alone, outside any transaction."""


Outcome = tuple[bool, Any]
"""(True, the value) or (False, the exception) of one job."""


class SqliteStore(Store):
    """SQLite (WAL) in the data dir, migrated on open.

    Every unit of work goes to one store thread through a queue. The thread takes every
    unit waiting there and runs them, up to `GROUP_MAX` at a time, in one transaction, each in its
    own savepoint: group commit. A unit that fails is rolled back to its savepoint and
    fails alone; the others commit together. Each caller is answered only after the
    commit that made its writes durable. If the group cannot commit (or a unit's error
    ended the transaction, or the lock could not be had), it is rolled back whole and
    every unit runs again on its own, so each caller gets its own unit's outcome.
    """

    def __init__(self, path: Path | str, *, busy_timeout: float = 10.0) -> None:
        self.path = Path(path)
        self._busy_timeout = busy_timeout
        self._jobs: queue.SimpleQueue[list[_Job]] = queue.SimpleQueue()
        self._pending: list[_Job] = []
        self._thread: threading.Thread | None = None
        self._db: Database | None = None
        self._conn: SqliteConn | None = None
        self._open = False
        self._stop = False

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
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()
        self._jobs, self._pending, self._stop = queue.SimpleQueue(), [], False
        # A daemon, like the workers of asyncio's default executor: a store never closed
        # must not hold up the interpreter's exit (SQLite survives being cut off).
        self._thread = threading.Thread(
            target=self._serve, args=(loop, ready), name="store", daemon=True
        )
        self._thread.start()
        try:
            await ready
        except BaseException:
            self._thread.join()
            self._thread = None
            raise
        self._open = True
        return self

    def _connect(self) -> Database:
        try:
            # Autocommit: a statement outside a transaction commits at once.
            conn = sqlite3.connect(
                self.path,
                timeout=self._busy_timeout,
                check_same_thread=False,
                isolation_level=None,
                cached_statements=STATEMENT_CACHE,
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
        if not self._open or self._thread is None:
            return
        self._open = False  # new work is refused; what is queued already still runs
        thread = self._thread

        def finish(conn: SqliteConn) -> None:
            self._stop = True
            conn.db.close()

        await self._submit(finish, grouped=False, closing=True)
        thread.join()
        self._thread, self._db, self._conn = None, None, None

    async def checkpoint(self) -> None:
        """Copy the WAL into the database and truncate it (`secure_delete` has zeroed the
        deleted rows' pages there), so no file in the data dir holds deleted words."""
        await self.run(lambda db: db.execute("pragma wal_checkpoint(TRUNCATE)").fetchall())

    async def run(self, fn: Callable[[Database], T]) -> T:
        """Run `fn(db)` on the store thread: raw sqlite-utils access (backups, tests)."""
        return await self._submit(lambda conn: fn(conn.db), grouped=False)

    async def _run(self, work: Work[T], *, transaction: bool, urgent: bool = False) -> T:
        # `urgent` changes nothing here: one thread, and one process owns the file.
        # Every unit is atomic here, `@query` or `@transaction`: it may share a group.
        return await self._submit(lambda conn: drive(work(conn)), grouped=True)

    def _submit(
        self, fn: Callable[[SqliteConn], T], *, grouped: bool, closing: bool = False
    ) -> asyncio.Future[T]:
        if not (self._open or closing):
            raise StoreError("store is not open")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        # Units submitted in one turn of the event loop reach the thread as one list: one
        # wake-up of the store thread for all of them, not one each.
        self._pending.append(_Job(fn, future, loop, grouped))
        if len(self._pending) == 1:
            loop.call_soon(self._flush)
        return future

    def _flush(self) -> None:
        jobs, self._pending = self._pending, []
        if jobs:
            self._jobs.put(jobs)

    # On the store thread.

    def _serve(self, loop: asyncio.AbstractEventLoop, ready: asyncio.Future[None]) -> None:
        try:
            self._db = self._connect()
        except BaseException as exc:
            loop.call_soon_threadsafe(_resolve, [(ready, (False, exc))])
            return
        conn = self._conn = SqliteConn(self._db)
        loop.call_soon_threadsafe(_resolve, [(ready, (True, None))])
        jobs = self._jobs
        while not self._stop:
            waiting = jobs.get()
            while not jobs.empty():  # and whatever else is queued by now (one reader: this)
                waiting += jobs.get_nowait()
            start = 0
            while start < len(waiting):
                end = start + 1
                if waiting[start].grouped:  # raw access and closing run alone
                    while end < len(waiting) and waiting[end].grouped and end - start < GROUP_MAX:
                        end += 1
                batch = waiting[start:end]
                try:
                    outcomes = [_alone(conn, batch[0])] if len(batch) == 1 else _group(conn, batch)
                except BaseException as exc:  # never leave a caller waiting forever
                    with contextlib.suppress(sqlite3.Error):
                        if conn.sql.in_transaction:
                            conn.sql.execute("rollback")
                    outcomes = [(False, exc)] * len(batch)
                _settle(batch, outcomes)
                start = end


def _alone(conn: SqliteConn, job: _Job) -> Outcome:
    """One job by itself: a unit of work in its own transaction, raw access as it is."""
    sql = conn.sql
    try:
        if not job.grouped:
            return True, job.fn(conn)
        sql.execute("begin")  # `atomic`, written out: this runs for every unit on its own
        try:
            value = job.fn(conn)
        except BaseException:
            if sql.in_transaction:
                sql.execute("rollback")
            raise
        sql.execute("commit")
        return True, value
    except BaseException as exc:
        return False, _store_error(exc)


def _group(conn: SqliteConn, batch: list[_Job]) -> list[Outcome]:
    """Several units in one transaction, one savepoint each; see `SqliteStore`."""
    sql = conn.sql
    outcomes: list[Outcome] = []
    try:
        sql.execute("begin")
        for job in batch:
            try:
                with conn.atomic():
                    outcomes.append((True, job.fn(conn)))
            except Exception as exc:
                if not sql.in_transaction or (
                    isinstance(exc, sqlite3.OperationalError) and _busy(exc)
                ):
                    raise _Regroup from exc
                outcomes.append((False, _store_error(exc)))  # rolled back to its savepoint
        sql.execute("commit")
        return outcomes
    except (_Regroup, sqlite3.Error):
        with contextlib.suppress(sqlite3.Error):
            if sql.in_transaction:
                sql.execute("rollback")
        return [_alone(conn, job) for job in batch]


class _Regroup(Exception):
    """The group's transaction cannot commit: each of its units runs again alone."""


def _settle(batch: list[_Job], outcomes: list[Outcome]) -> None:
    """Hand each outcome to its caller's event loop, one wake-up per loop."""
    loop = batch[0].loop
    if all(job.loop is loop for job in batch):  # the usual case: the one loop of the process
        items = [(job.future, outcome) for job, outcome in zip(batch, outcomes, strict=True)]
        with contextlib.suppress(RuntimeError):  # that loop is closed: nobody waits
            loop.call_soon_threadsafe(_resolve, items)
        return
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Any], Outcome]]] = {}
    for job, outcome in zip(batch, outcomes, strict=True):
        by_loop.setdefault(job.loop, []).append((job.future, outcome))
    for loop, items in by_loop.items():
        with contextlib.suppress(RuntimeError):  # that loop is closed: nobody waits
            loop.call_soon_threadsafe(_resolve, items)


def _resolve(items: list[tuple[asyncio.Future[Any], Outcome]]) -> None:
    for future, (ok, value) in items:
        if future.done():  # its caller was cancelled
            continue
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)


def _store_error(exc: BaseException) -> BaseException:
    """SQLite's errors as the store's own; anything else as it is."""
    if isinstance(exc, StoreError) or not isinstance(exc, sqlite3.Error):
        return exc
    if isinstance(exc, sqlite3.OperationalError) and _busy(exc):
        error: StoreError = StoreBusy(f"database is busy: {exc}")
    else:
        error = StoreError(f"database error: {exc}")
    error.__cause__ = exc
    return error


def _busy(exc: sqlite3.OperationalError) -> bool:
    """SQLITE_BUSY or SQLITE_LOCKED: another connection holds the lock; trying again helps."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return "locked" in str(exc) or "busy" in str(exc)
