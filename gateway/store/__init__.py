"""The store: SQLite by default (sqlite-utils, one worker thread), PostgreSQL when
`SKILLGATE_DATABASE_URL` names one (asyncpg, `gateway.store.postgres`).

Every method is written once (`gateway.store.sql`), in the query class of its domain;
`Store` is all of them, and `open_store(settings)` opens the backend the settings select.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.store.base import Store
from gateway.store.sqlite import SqliteStore

if TYPE_CHECKING:
    from gateway.config import Settings


def store_for(settings: Settings) -> Store:
    """The store the settings select, not yet opened."""
    if settings.database_url is not None:
        # The PostgreSQL driver is imported only when a URL asks for it.
        from gateway.store.postgres import PostgresStore

        return PostgresStore(settings.database_url.get_secret_value())
    return SqliteStore(settings.db_path)


async def open_store(settings: Settings) -> Store:
    """The store the settings select, connected and migrated."""
    return await store_for(settings).open()


__all__ = ["SqliteStore", "Store", "open_store", "store_for"]
