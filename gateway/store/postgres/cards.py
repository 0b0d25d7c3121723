"""PostgreSQL twin of gateway.store.cards."""

from __future__ import annotations

from gateway.store.postgres.base import PgQueriesBase


class PgCardQueries(PgQueriesBase):
    """Same methods as gateway.store.cards, on PostgreSQL."""
