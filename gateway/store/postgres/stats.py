"""PostgreSQL twin of gateway.store.stats."""

from __future__ import annotations

from gateway.store.postgres.base import PgQueriesBase


class PgStatsQueries(PgQueriesBase):
    """Same methods as gateway.store.stats, on PostgreSQL."""
