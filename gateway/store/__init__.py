"""The store: SQLite by default (sqlite-utils, one worker thread), PostgreSQL when
`SKILLGATE_DATABASE_URL` names one (asyncpg, `gateway.store.postgres`).

Both backends have the same methods and the same numbered migrations; `Store` is
either, and `open_store(settings)` opens the one the settings select.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

from gateway.store.db import SqliteStore

if TYPE_CHECKING:
    from gateway.config import Settings
    from gateway.store.postgres import PostgresStore

    Store: TypeAlias = SqliteStore | PostgresStore
else:
    # Annotations only; the PostgreSQL driver is imported when a URL asks for it.
    Store = SqliteStore


def store_for(settings: Settings) -> Store:
    """The store the settings select, not yet opened."""
    if settings.database_url is not None:
        from gateway.store.postgres import PostgresStore

        return PostgresStore(settings.database_url.get_secret_value())
    return SqliteStore(settings.db_path)


async def open_store(settings: Settings) -> Store:
    """The store the settings select, connected and migrated."""
    return await store_for(settings).open()


__all__ = ["SqliteStore", "Store", "open_store", "store_for"]
