"""Query parameters of the admin API, checked: a bad one is 400, never a 500."""

from __future__ import annotations

from aiohttp import web


def int_param(request: web.Request, name: str, default: int, *, low: int, high: int) -> int:
    """An integer query parameter within bounds, or 400."""
    raw = request.query.get(name)
    if raw is None:
        return default
    try:
        value = int(raw) if len(raw) <= 40 else None  # thousands of digits cost, and fail
    except ValueError:
        value = None
    if value is None:
        raise web.HTTPBadRequest(text=f"{name} must be an integer")
    if not low <= value <= high:
        raise web.HTTPBadRequest(text=f"{name} must be between {low} and {high}")
    return value


MAX_ID = 2**63 - 1


def positive(raw: str, high: int = MAX_ID) -> int | None:
    """`raw` as an integer in 1..high, or None; never parses thousands of digits."""
    if not (raw.isascii() and raw.isdigit()) or len(raw) > len(str(high)):
        return None
    value = int(raw)
    return value if 0 < value <= high else None
