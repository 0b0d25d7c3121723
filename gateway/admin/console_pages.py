"""Console pages for what the channels record: feedback, conversations, synthesis runs."""

from __future__ import annotations

import time
from datetime import UTC, date, datetime, timedelta

from aiohttp import web

from gateway.admin.console import page, refuse
from gateway.admin.console_chart import ROLLING_DAYS, rate_chart
from gateway.admin.console_views import PER_PAGE, page_number
from gateway.admin.params import positive
from gateway.channels.registry import platforms
from gateway.runtime.keys import SCHEDULE, STORE, SYNTHESIZER
from gateway.synthesis.calibration import judge_line
from gateway.synthesis.held import HELD_TRIES, held_drafts
from gateway.synthesis.synthesizer import LOCK_NAME, Synthesizer

WINDOWS = {"7": 7, "30": 30, "90": 90, "365": 365, "all": None}
DEFAULT_WINDOW = "30"
DOWNVOTES = 12
RUNS = 100


def _midnight(day: date) -> float:
    return datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp()


async def feedback(request: web.Request) -> web.Response:
    """The rolling 👍 rate over daily counts as a chart, totals, and the latest 👎 with comments."""
    store = request.config_dict[STORE]
    window = request.query.get("days", DEFAULT_WINDOW)
    if window not in WINDOWS:
        window = DEFAULT_WINDOW
    days = WINDOWS[window]
    today = datetime.fromtimestamp(time.time(), UTC).date()
    if days is None:
        history = await store.daily_ratings()
        start = date.fromisoformat(history[0].day) if history else today
    else:
        start = today - timedelta(days=days - 1)
        # The rolling rate of the first days shown counts the days just before them.
        history = await store.daily_ratings(_midnight(start - timedelta(days=ROLLING_DAYS - 1)))
    daily = [d for d in history if date.fromisoformat(d.day) >= start]
    ups = sum(d.ups for d in daily)
    downs = sum(d.downs for d in daily)
    return await page(
        request,
        "feedback.html",
        active="feedback",
        window=window,
        windows=list(WINDOWS),
        chart=rate_chart(history, start, today),
        rolling_days=ROLLING_DAYS,
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
        platforms=[(p.name, p.label) for p in platforms()],
        page_no=number,
        more=len(rows) > PER_PAGE,
    )


async def conversation(request: web.Request) -> web.Response:
    """A session's transcript with each answer's trace and ratings."""
    store = request.config_dict[STORE]
    sid = positive(request.match_info["id"])
    if sid is None:
        raise web.HTTPNotFound()
    found = await store.sessions_by_id([sid])
    if not found:
        deleted = (await store.deleted_sessions([sid])).get(sid)
        if deleted is None:
            raise web.HTTPNotFound()
        return await page(request, "deleted.html", status=410, active="conversations", d=deleted)
    (session,) = found.values()
    return await page(
        request,
        "conversation.html",
        active="conversations",
        s=session,
        entries=await store.session_transcript(session.id),
    )


def _next_pass(request: web.Request) -> float | None:
    schedule = request.config_dict.get(SCHEDULE)
    return None if schedule is None else schedule.next_pass_at()


async def runs(request: web.Request) -> web.Response:
    """Synthesis runs, newest first, the next scheduled pass and a button to run one now."""
    store = request.config_dict[STORE]
    return await page(
        request,
        "runs.html",
        active="runs",
        runs=await store.list_runs(RUNS),
        judge=await judge_standing(request.config_dict[SYNTHESIZER]),
        held=await held_drafts(store),
        held_tries=HELD_TRIES,
        next_pass=_next_pass(request),
        busy=await store.lock_holder(LOCK_NAME, time.time()) is not None,
    )


async def judge_standing(synthesizer: Synthesizer) -> tuple[str, str] | None:
    """The same-claim judge's verdict and its line, as last calibrated (None: not yet)."""
    found = await synthesizer.judge_status()
    return None if found is None else (found.verdict, judge_line(found))


async def run(request: web.Request) -> web.Response:
    """One run: the proposals it made, what it suppressed (and matched), what it refused."""
    store = request.config_dict[STORE]
    rid = positive(request.match_info["id"])
    if rid is None:
        raise web.HTTPNotFound()
    record = await store.get_run(rid)
    if record is None:
        raise web.HTTPNotFound()
    dropped = await store.run_dropped(record.id)
    matched_ids = [d.matched for d in dropped if d.matched is not None]
    matched = {}
    for pid in dict.fromkeys(matched_ids):
        found = await store.get_proposal(pid)
        if found is not None:
            matched[pid] = found
    return await page(
        request,
        "run.html",
        active="runs",
        r=record,
        proposals=await store.run_proposals(record.id),
        suppressed=[d for d in dropped if d.kind == "suppressed"],
        refused=[d for d in dropped if d.kind == "refused"],
        checks=await store.run_checks(record.id),
        matched=matched,
    )


async def run_now(request: web.Request) -> web.StreamResponse:
    """Run one synthesis pass now and show it; a kind 409 while another pass runs."""
    summary = await request.config_dict[SYNTHESIZER].run("console")
    if summary.status == "busy" or summary.run_id is None:
        return await refuse(
            request,
            409,
            "A pass is running",
            "Another synthesis pass is running right now. Its results appear on the Runs page"
            " when it ends; try again after that.",
        )
    raise web.HTTPSeeOther(f"/admin/runs/{summary.run_id}")


def add_routes(app: web.Application) -> None:
    app.router.add_get("/feedback", feedback)
    app.router.add_get("/conversations", conversations)
    app.router.add_get("/conversations/{id}", conversation)
    app.router.add_get("/runs", runs)
    app.router.add_post("/runs", run_now)
    app.router.add_get("/runs/{id}", run)
