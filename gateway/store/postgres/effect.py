"""PostgreSQL twin of gateway.store.effect."""

from __future__ import annotations

from gateway.store.postgres.base import PgQueriesBase


class PgEffectQueries(PgQueriesBase):
    """Same methods as gateway.store.effect, on PostgreSQL."""
