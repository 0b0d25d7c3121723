"""PostgreSQL twin of gateway.store.synthesis."""

from __future__ import annotations

from gateway.store.postgres.base import PgQueriesBase


class PgSynthesisQueries(PgQueriesBase):
    """Same methods as gateway.store.synthesis, on PostgreSQL."""
