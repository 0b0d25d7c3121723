"""PostgreSQL twin of gateway.store.deliveries."""

from __future__ import annotations

from gateway.store.postgres.base import PgQueriesBase


class PgDeliveryQueries(PgQueriesBase):
    """Same methods as gateway.store.deliveries, on PostgreSQL."""
