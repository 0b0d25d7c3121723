"""The Tools page: each tool server (running, or why not), its tools and their policies, and
the tool calls of the last days by tool and status."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from aiohttp import web

from gateway.admin.console import page
from gateway.runtime.keys import STORE, TOOLS

DAYS = 30


async def tools_page(request: web.Request) -> web.Response:
    tools = request.config_dict.get(TOOLS)
    since = datetime.fromtimestamp(time.time(), UTC).date() - timedelta(days=DAYS - 1)
    calls = await request.config_dict[STORE].tool_usage(since.isoformat())
    return await page(
        request,
        "tools.html",
        active="tools",
        servers=tools.status() if tools is not None else [],
        configured=tools is not None,
        calls=calls,
        days=DAYS,
    )


def add_routes(app: web.Application) -> None:
    app.router.add_get("/tools", tools_page)
