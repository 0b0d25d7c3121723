"""PostgreSQL twin of gateway.store.proposals."""

from __future__ import annotations

from gateway.store.postgres.base import PgQueriesBase


class PgProposalQueries(PgQueriesBase):
    """Same methods as gateway.store.proposals, on PostgreSQL."""
