"""PostgreSQL access (asyncpg) with the same methods and migrations as the SQLite store."""

from gateway.store.postgres.db import PostgresStore, redact_url

__all__ = ["PostgresStore", "redact_url"]
