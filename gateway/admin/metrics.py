"""`GET /metrics`: the counters in the Prometheus text format, for local or admin callers."""

from __future__ import annotations

import ipaddress
import logging

from aiohttp import web
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from gateway.admin.auth import bearer_admin, unauthorized
from gateway.errors import StoreError
from gateway.runtime.keys import SETTINGS, STORE
from gateway.runtime.metrics import METRICS

log = logging.getLogger(__name__)

# Headers a reverse proxy adds: a request carrying one is not trusted as local.
PROXY_HEADERS = ("X-Forwarded-For", "X-Real-IP", "Forwarded")


def is_local(request: web.Request) -> bool:
    """True for a direct connection from the loopback interface (not through a proxy)."""
    if any(name in request.headers for name in PROXY_HEADERS):
        return False
    try:
        ip = ipaddress.ip_address(request.remote or "")
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped.is_loopback
    return ip.is_loopback


async def metrics_endpoint(request: web.Request) -> web.Response:
    """GET /metrics: from localhost, or anywhere with the admin bearer token."""
    admins = request.app[SETTINGS].admins()
    allowed = is_local(request) or (bool(admins) and bearer_admin(request, admins) is not None)
    if not allowed:
        return unauthorized("metrics need the admin bearer token or a local connection")
    metrics = request.app[METRICS]
    metrics.refresh_model()
    try:
        await metrics.refresh(request.app[STORE])
    except StoreError as exc:
        # The counters are still worth scraping; /healthz reports the database.
        log.warning("metrics: cannot read the store: %s", exc)
    return web.Response(body=metrics.render(), headers={"Content-Type": CONTENT_TYPE_LATEST})
