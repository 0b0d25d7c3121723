"""What every store method is written against: one connection, one dialect, `?` marks.

Each store method exists once. It is an `async def` taking a `Conn` after `self`,
decorated with `@query` (one unit of work on one connection) or `@transaction` (the
same, inside one transaction); `@urgent` is a `@query` that must not queue behind the
others (a replica keeping its inbox claims alive while its handlers fill the pool).
The decorator hides the connection from callers:

    @query
    async def get_session(self, c: Conn, session_id: int) -> SessionRecord | None:
        row = await c.fetchrow("select * from sessions where id = ?", session_id)
        ...

    session = await store.get_session(7)

SQL is written once, with `?` marks, in the subset SQLite and PostgreSQL share
(`returning`, `on conflict`, `coalesce`, ...). What truly differs lives in the two
backends (`gateway.store.sqlite`, `gateway.store.postgres`): how a unit of work
reaches its connection (SQLite: the one store thread; PostgreSQL: a pool), the
placeholders, row locks, JSON list expansion, advisory locks (also as a select item),
`limit` and whether a `with` may insert.

A method never calls another decorated method: shared steps are plain module
functions taking the `Conn`, so a unit of work stays on one connection.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Coroutine, Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

T = TypeVar("T")
P = ParamSpec("P")
Q = TypeVar("Q", bound="QueriesBase")


class Dialect(Protocol):
    """The SQL fragments that differ between the two databases."""

    name: str
    for_update: str
    """Appended to a select whose rows the transaction will change ("" where writers queue)."""
    skip_locked: str
    """Like `for_update`, but rows another transaction holds are skipped, not waited for."""

    snapshot: str
    """First statement of a read-only transaction that must see one snapshot ("": all do)."""

    writable_cte: bool
    """A `with` may hold an `insert ... returning` whose rows the statement's own insert reads
    (one statement for two tables' rows)."""

    def lock_item(self, key: str) -> tuple[str, tuple[Any, ...]] | None:
        """A select item taking the named lock as `Conn.lock` does, and its arguments; None
        where there is nothing to take."""
        ...

    def json_elements(self, expr: str, alias: str) -> str:
        """A from-clause item `alias` with a column `value` per element of a JSON text list."""
        ...

    def json_text(self, expr: str, key: str) -> str:
        """The text of field `key` of the JSON object `expr` (a text column or element)."""
        ...

    def json_list(self, column: str, source: str, order: str) -> str:
        """A scalar subquery: the JSON text list of `column` over `source` (`from ... where
        ...`) in the order of `order` (`[]` where no row is)."""
        ...

    def limit(self, n: int) -> int | None:
        """The `limit ?` argument for `n`, where a negative `n` means no limit."""
        ...


class Conn(Protocol):
    """One connection: the only thing a store method talks to."""

    @property
    def dialect(self) -> Dialect:
        """The dialect of the database behind this connection."""
        ...

    async def fetch(self, sql: str, *args: Any) -> list[dict[str, Any]]:
        """Every row, as dicts."""
        ...

    async def fetchrow(self, sql: str, *args: Any) -> dict[str, Any] | None:
        """The first row, or None."""
        ...

    async def fetchval(self, sql: str, *args: Any) -> Any:
        """The first column of the first row, or None."""
        ...

    async def execute(self, sql: str, *args: Any) -> int:
        """Run one statement; returns the rows it touched."""
        ...

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """Run one statement once per row of arguments."""
        ...

    def transaction(self) -> AbstractAsyncContextManager[None]:
        """A (nested) transaction, committed when the block ends, rolled back on error."""
        ...

    async def lock(self, key: str) -> None:
        """Hold the named lock until the transaction ends (writers of one thing queue)."""
        ...


Work = Callable[[Conn], Coroutine[Any, Any, T]]


class QueriesBase:
    """What the query mixins rely on: a backend that runs one unit of work."""

    async def _run(
        self, work: Work[T], *, transaction: bool, urgent: bool = False
    ) -> T:  # pragma: no cover
        raise NotImplementedError


def query(
    method: Callable[Concatenate[Q, Conn, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[Q, P], Coroutine[Any, Any, T]]:
    """A store method: its body runs as one unit of work on one connection."""
    return _unit(method, transaction=False)


def transaction(
    method: Callable[Concatenate[Q, Conn, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[Q, P], Coroutine[Any, Any, T]]:
    """A store method whose body runs in one transaction: all of it happens, or none."""
    return _unit(method, transaction=True)


def urgent(
    method: Callable[Concatenate[Q, Conn, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[Q, P], Coroutine[Any, Any, T]]:
    """A `@query` on a connection of its own where the backend has several: it never waits
    for one that busy handlers hold (claims would expire while the pool is full)."""
    return _unit(method, transaction=False, urgent=True)


def _unit(
    method: Callable[Concatenate[Q, Conn, P], Coroutine[Any, Any, T]],
    *,
    transaction: bool,
    urgent: bool = False,
) -> Callable[Concatenate[Q, P], Coroutine[Any, Any, T]]:
    @functools.wraps(method)
    async def run(self: Q, /, *args: P.args, **kwargs: P.kwargs) -> T:
        def work(c: Conn) -> Coroutine[Any, Any, T]:
            return method(self, c, *args, **kwargs)

        if urgent:
            return await self._run(work, transaction=transaction, urgent=True)
        return await self._run(work, transaction=transaction)

    return run


def marks(values: Sequence[Any]) -> str:
    """`?, ?, ?` for an `in (...)` list of `values` (never empty: `in ()` is no SQL)."""
    return ", ".join("?" for _ in values) or "null"


def insert_sql(table: str, columns: Sequence[str], suffix: str = "") -> str:
    """`insert into table (a, b) values (?, ?)` plus `suffix`."""
    return f"insert into {table} ({', '.join(columns)}) values ({marks(columns)})" + (
        f" {suffix}" if suffix else ""
    )


def decode_json_fields(row: dict[str, Any], *names: str) -> dict[str, Any]:
    """Turn the named JSON text columns back into Python values."""
    for name in names:
        if isinstance(row.get(name), str):
            row[name] = json.loads(row[name])
    return row
