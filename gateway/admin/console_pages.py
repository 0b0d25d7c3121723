"""Console pages for what the channels record: feedback, conversations, synthesis runs."""

from __future__ import annotations

import time
from datetime import UTC, date, datetime, timedelta

from aiohttp import web

from gateway.admin.console import page
from gateway.admin.console_chart import rate_chart
from gateway.admin.console_views import PER_PAGE, page_number
from gateway.keys import STORE

WINDOWS = {"7": 7, "30": 30, "90": 90, "365": 365, "all": None}
DEFAULT_WINDOW = "30"
DOWNVOTES = 12
RUNS = 100


def _midnight(day: date) -> float:
    return datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp()


async def feedback(request: web.Request) -> web.Response:
    """👍 rate per day as a chart, totals, and the latest 👎 with their comments."""
    store = request.config_dict[STORE]
    window = request.query.get("days", DEFAULT_WINDOW)
    if window not in WINDOWS:
        window = DEFAULT_WINDOW
    days = WINDOWS[window]
    today = datetime.fromtimestamp(time.time(), UTC).date()
    if days is None:
        daily = await store.daily_ratings()
        start = date.fromisoformat(daily[0].day) if daily else today
    else:
        start = today - timedelta(days=days - 1)
        daily = await store.daily_ratings(_midnight(start))
    ups = sum(d.ups for d in daily)
    downs = sum(d.downs for d in daily)
    return await page(
        request,
        "feedback.html",
        active="feedback",
        window=window,
        windows=list(WINDOWS),
        chart=rate_chart(daily, start, today),
        daily=daily,
        ups=ups,
        downs=downs,
        rate=ups / (ups + downs) if ups + downs else None,
        downvotes=await store.latest_downvotes(DOWNVOTES),
    )


async def conversations(request: web.Request) -> web.Response:
    """Sessions, most recently active first, optionally of one channel."""
    store = request.config_dict[STORE]
    channel = request.query.get("channel") or None
    if channel is not None and (len(channel) > 32 or not channel.isidentifier()):
        channel = None
    number = page_number(request)
    rows = await store.session_summaries(
        limit=PER_PAGE + 1, offset=(number - 1) * PER_PAGE, channel=channel
    )
    return await page(
        request,
        "conversations.html",
        active="conversations",
        sessions=rows[:PER_PAGE],
        total=await store.count_sessions(channel),
        channel=channel,
        page_no=number,
        more=len(rows) > PER_PAGE,
    )


async def conversation(request: web.Request) -> web.Response:
    """A session's transcript with each answer's trace and ratings."""
    store = request.config_dict[STORE]
    raw = request.match_info["id"]
    if not (raw.isascii() and raw.isdigit()) or not 0 < int(raw) < 2**63:
        raise web.HTTPNotFound()
    found = await store.sessions_by_id([int(raw)])
    if not found:
        raise web.HTTPNotFound()
    (session,) = found.values()
    return await page(
        request,
        "conversation.html",
        active="conversations",
        s=session,
        entries=await store.session_transcript(session.id),
    )


async def runs(request: web.Request) -> web.Response:
    """Synthesis runs, newest first: when, what they read, proposed, suppressed, errors."""
    store = request.config_dict[STORE]
    return await page(request, "runs.html", active="runs", runs=await store.list_runs(RUNS))


def add_routes(app: web.Application) -> None:
    app.router.add_get("/feedback", feedback)
    app.router.add_get("/conversations", conversations)
    app.router.add_get("/conversations/{id}", conversation)
    app.router.add_get("/runs", runs)
