"""PostgreSQL twin of gateway.store.registry."""

from __future__ import annotations

from gateway.store.postgres.base import PgQueriesBase


class PgRegistryQueries(PgQueriesBase):
    """Same methods as gateway.store.registry, on PostgreSQL."""
