"""Bearer-token check for the admin API."""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def bearer_ok(request: web.Request, token: str | None) -> bool:
    """True when the request carries `Authorization: Bearer <token>` (constant time)."""
    if not token:
        return False
    header = request.headers.get("Authorization", "")
    scheme, _, given = header.partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(given.strip().encode(), token.encode())


def unauthorized(reason: str) -> web.Response:
    return web.json_response(
        {"error": reason}, status=401, headers={"WWW-Authenticate": 'Bearer realm="skillgate"'}
    )
