"""Bearer-token check for the admin API."""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, Mapping

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


API_ADMIN: web.RequestKey[str] = web.RequestKey("api.admin", str)
"""The admin whose bearer token the request carried ("" the single token)."""


def bearer_admin(request: web.Request, admins: Mapping[str, str]) -> str | None:
    """Whose token `Authorization: Bearer <token>` carries, comparing with every one."""
    header = request.headers.get("Authorization", "")
    scheme, _, given = header.partition(" ")
    if scheme.lower() != "bearer":
        return None
    found = None
    for name, token in admins.items():
        if token and hmac.compare_digest(
            given.strip().encode("utf-8", "surrogatepass"), token.encode()
        ):
            found = name
    return found


def unauthorized(reason: str) -> web.Response:
    return web.json_response(
        {"error": reason}, status=401, headers={"WWW-Authenticate": 'Bearer realm="skillgate"'}
    )
