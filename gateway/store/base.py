"""What every query mixin may rely on: `run` and small row helpers."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from sqlite_utils import Database

T = TypeVar("T")


class QueriesBase:
    """Declares `run`, which the Store implements on its worker thread."""

    async def run(self, fn: Callable[[Database], T]) -> T:  # pragma: no cover - abstract
        raise NotImplementedError


def one(
    db: Database, sql: str, params: list[Any] | dict[str, Any] | None = None
) -> dict[str, Any] | None:
    """The first row of a query, or None."""
    for row in db.query(sql, params or []):
        return dict(row)
    return None


def decode_json_fields(row: dict[str, Any], *names: str) -> dict[str, Any]:
    """Turn the named JSON text columns back into Python values."""
    for name in names:
        if isinstance(row.get(name), str):
            row[name] = json.loads(row[name])
    return row
