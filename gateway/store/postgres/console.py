"""PostgreSQL twin of gateway.store.console."""

from __future__ import annotations

from gateway.store.postgres.base import PgQueriesBase


class PgConsoleQueries(PgQueriesBase):
    """Same methods as gateway.store.console, on PostgreSQL."""
