"""SQLite access (sqlite-utils, one worker thread) and numbered schema migrations."""

from gateway.store.db import Store

__all__ = ["Store"]
