"""Query parameters of the admin API, checked: a bad one is 400, never a 500."""

from __future__ import annotations

from aiohttp import web


def int_param(request: web.Request, name: str, default: int, *, low: int, high: int) -> int:
    """An integer query parameter within bounds, or 400."""
    raw = request.query.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise web.HTTPBadRequest(text=f"{name} must be an integer") from None
    if not low <= value <= high:
        raise web.HTTPBadRequest(text=f"{name} must be between {low} and {high}")
    return value
