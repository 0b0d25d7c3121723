"""Console pages for usage (a chart per day, top users and chats, synthesis's share) and users
(an export of one user's data, and deleting it)."""

from __future__ import annotations

import json
import logging
import math
import time
from dataclasses import dataclass, field
from datetime import date

from aiohttp import web

from gateway.admin.console import decider, page, refuse
from gateway.admin.console_chart import MAX_X_LABELS, Frame, Tick
from gateway.channels.registry import platforms
from gateway.conversation.privacy import forget
from gateway.core.models import TERMINAL
from gateway.runtime.keys import LINKS, REVIEW, SETTINGS, STORE
from gateway.usage import Totals, UsageReport, usage_report

log = logging.getLogger(__name__)

USAGE_WINDOWS = {"7": 7, "30": 30, "90": 90}
DEFAULT_USAGE_WINDOW = "30"
MAX_USER_ID = 128


@dataclass(frozen=True)
class UsageBar:
    """One day: answers' tokens, synthesis's tokens stacked on top."""

    day: str
    x: float
    width: float
    answers_y: float
    answers_h: float
    synthesis_y: float
    synthesis_h: float
    answers: Totals
    synthesis: Totals


@dataclass
class UsageChart(Frame):
    """Tokens per day, in the feedback chart's frame."""

    bars: list[UsageBar] = field(default_factory=list)
    max_tokens: int = 0


def _short(n: float) -> str:
    """A tick's label: 500, 1k, 2.5k, 12k, 1.5M."""
    for unit, suffix in ((1_000_000, "M"), (1000, "k")):
        if n >= unit:
            return f"{n / unit:.1f}".removesuffix(".0") + suffix
    return f"{n:.0f}"


def round_ticks(top: float, most: int = 4) -> list[float]:
    """Gridline values from 0 to at least `top` in steps of 1, 2, 2.5 or 5 times a power of
    ten, at most `most` steps: 0, 200, 400, 600 rather than 0, 441, 882, 1.3k."""
    if top <= 0:
        return [0.0, 1.0]
    magnitude = 10 ** math.floor(math.log10(top / most))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude * most >= top)
    if step < 1:
        step = 1.0  # tokens are whole
    count = math.ceil(top / step - 1e-9)
    return [step * k for k in range(count + 1)]


def usage_chart(report: UsageReport) -> UsageChart:
    """Tokens per UTC day as stacked bars: answers below, synthesis above."""
    chart = UsageChart()
    days = report.day_list()
    chart.max_tokens = max((a.tokens + s.tokens for _, a, s in days), default=0)
    plot_w, plot_h = chart.right - chart.left, chart.bottom - chart.top
    ticks = round_ticks(chart.max_tokens)
    scale = ticks[-1]
    for value in ticks:
        chart.y_ticks.append(Tick(chart.bottom - plot_h * value / scale, _short(value)))
    slot = plot_w / max(len(days), 1)
    width = max(1.5, min(18.0, slot * 0.7))
    count = min(MAX_X_LABELS, len(days))
    labelled = {round(k * (len(days) - 1) / (count - 1)) if count > 1 else 0 for k in range(count)}
    for n, (day, answers, synthesis) in enumerate(days):
        x = chart.left + slot * (n + 0.5)
        if n in labelled:
            d = date.fromisoformat(day)
            chart.x_ticks.append(Tick(x, f"{d.day} {d.strftime('%b')}"))
        a_h = answers.tokens / scale * plot_h
        s_h = synthesis.tokens / scale * plot_h
        chart.bars.append(
            UsageBar(
                day,
                x - width / 2,
                width,
                chart.bottom - a_h,
                a_h,
                chart.bottom - a_h - s_h,
                s_h,
                answers,
                synthesis,
            )
        )
    return chart


async def usage(request: web.Request) -> web.Response:
    """Tokens and cost per day as a chart, the top users and chats, channels, models."""
    window = request.query.get("days", DEFAULT_USAGE_WINDOW)
    if window not in USAGE_WINDOWS:
        window = DEFAULT_USAGE_WINDOW
    settings = request.config_dict[SETTINGS]
    report = await usage_report(
        request.config_dict[STORE],
        settings.prices(),
        USAGE_WINDOWS[window],
        media=settings.media_prices(),
    )
    return await page(
        request,
        "usage.html",
        active="usage",
        window=window,
        windows=list(USAGE_WINDOWS),
        r=report,
        chart=usage_chart(report),
        top_users=report.top(report.users),
        top_chats=report.top(report.chats),
        channels=report.top(report.channels, len(report.channels)),
        models=report.top(report.models, len(report.models)),
    )


def user_ref(channel: object, user: object) -> tuple[str, str] | None:
    """A (channel, user id) from a form or query, or None when it is not one.

    Every known platform counts, configured or not: a platform turned off still has users.
    """
    if not isinstance(channel, str) or not isinstance(user, str):
        return None
    if channel not in channel_names():
        return None
    user = user.strip()
    if not user or len(user) > MAX_USER_ID or not user.isprintable():
        return None
    return channel, user


def channel_names() -> list[str]:
    """The platforms whose users the console and the API export and forget, and the
    terminal's (`skillgate chat`), whose users are listed beside theirs."""
    return [*(p.name for p in platforms()), TERMINAL]


async def users(request: web.Request) -> web.Response:
    """Export one user's data, or delete it."""
    known = await request.config_dict[STORE].known_users()
    return await page(
        request, "users.html", active="users", channels=channel_names(), done=None, known=known
    )


async def memory(request: web.Request) -> web.Response:
    """What one user asked the bot to remember (/remember, the model's `remember` tool)."""
    ref = user_ref(request.query.get("channel"), request.query.get("user"))
    if ref is None:
        return await refuse(request, 400, "Not a user", "Choose a channel and give a user id.")
    entries = await request.config_dict[STORE].memory_entries(*ref)
    return await page(
        request,
        "users.html",
        active="users",
        channels=channel_names(),
        done=None,
        who=ref,
        memory=entries,
        known=await request.config_dict[STORE].known_users(),
    )


async def export(request: web.Request) -> web.StreamResponse:
    """One user's stored data as a JSON download."""
    ref = user_ref(request.query.get("channel"), request.query.get("user"))
    if ref is None:
        return await refuse(request, 400, "Not a user", "Choose a channel and give a user id.")
    data = await request.config_dict[STORE].export_user(*ref)
    name = "".join(ch if ch.isalnum() else "-" for ch in f"{ref[0]}-{ref[1]}")
    return web.Response(
        text=json.dumps(data, indent=2, ensure_ascii=False),
        content_type="application/json",
        headers={"Content-Disposition": f'attachment; filename="skillgate-{name}.json"'},
    )


async def forget_user(request: web.Request) -> web.StreamResponse:
    """Delete everything about one user, once the form's confirmation box is ticked."""
    form = await request.post()
    ref = user_ref(form.get("channel"), form.get("user"))
    if ref is None:
        return await refuse(request, 400, "Not a user", "Choose a channel and give a user id.")
    if form.get("confirm") != "yes":
        return await refuse(
            request,
            400,
            "Not confirmed",
            "Tick the box to confirm that everything about this user is to be deleted.",
        )
    media = request.config_dict[SETTINGS].media_dir
    done = await forget(
        request.config_dict[STORE],
        *ref,
        now=time.time(),
        media=media,
        review=request.config_dict[REVIEW],
        links=request.config_dict.get(LINKS),
    )
    log.info("console: %s deleted a %s user's data", decider(request), ref[0])
    known = await request.config_dict[STORE].known_users()
    return await page(
        request,
        "users.html",
        active="users",
        channels=channel_names(),
        done=done,
        who=ref,
        known=known,
    )


def add_routes(app: web.Application) -> None:
    app.router.add_get("/usage", usage)
    app.router.add_get("/users", users)
    app.router.add_get("/users/export", export)
    app.router.add_get("/users/memory", memory)
    app.router.add_post("/users/forget", forget_user)
