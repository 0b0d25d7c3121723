"""PostgreSQL twin of gateway.store.conversations."""

from __future__ import annotations

from gateway.store.postgres.base import PgQueriesBase


class PgConversationQueries(PgQueriesBase):
    """Same methods as gateway.store.conversations, on PostgreSQL."""
