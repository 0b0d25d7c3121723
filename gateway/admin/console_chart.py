"""The feedback chart: a rolling 7-day 👍 rate over daily-count bars; SVG geometry only.

A day with one or two ratings would swing a daily rate between 0 and 100 %: the
line is the share of 👍 among the ratings of the last seven days instead, and the
bars show how many ratings each day had, so low volume reads as low volume.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date

from gateway.store.console import DayRating

# Wide enough for a desk; on a phone the stylesheet enlarges text, points and line instead.
WIDTH, HEIGHT = 640, 320
LEFT, RIGHT, TOP, BOTTOM = 78, 22, 22, 50
MAX_X_LABELS = 5
ROLLING_DAYS = 7
BAR_BAND = 0.3
"""The share of the plot's height the tallest daily-count bar takes."""


@dataclass(frozen=True)
class ChartPoint:
    """A day with ratings, placed at the rolling 👍 rate of the days up to it."""

    day: str
    x: float
    y: float
    size: int
    rate: float
    """The rolling rate: 👍 among all ratings of this day and the ROLLING_DAYS - 1 before it."""
    ups: int
    total: int
    day_ups: int
    day_total: int

    @property
    def r(self) -> float:
        return 3.0 + self.size


@dataclass(frozen=True)
class Bar:
    """The number of ratings of one day, drawn along the bottom of the plot."""

    day: str
    x: float
    y: float
    width: float
    height: float
    total: int


def _size(total: int) -> int:
    """1 to 4: how many ratings a point stands for, on a log scale."""
    return min(4, 1 + int(math.log2(total) / 1.5)) if total > 0 else 1


@dataclass(frozen=True)
class Tick:
    """A gridline or axis label position."""

    at: float
    label: str


@dataclass
class Frame:
    """A chart's canvas and the plot area inside it (the console's charts share it)."""

    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    right: int = WIDTH - RIGHT
    top: int = TOP
    bottom: int = HEIGHT - BOTTOM
    x_ticks: list[Tick] = field(default_factory=list)
    y_ticks: list[Tick] = field(default_factory=list)


@dataclass
class Chart(Frame):
    """Everything the template needs to draw the chart."""

    points: list[ChartPoint] = field(default_factory=list)
    bars: list[Bar] = field(default_factory=list)
    lines: list[list[tuple[float, float]]] = field(default_factory=list)
    """The rolling rate as runs of days; a run ends where ROLLING_DAYS passed without ratings."""
    max_daily: int = 0

    @property
    def polylines(self) -> list[str]:
        return [" ".join(f"{x:.1f},{y:.1f}" for x, y in run) for run in self.lines if len(run) > 1]

    @property
    def band_top(self) -> float:
        """Where the daily-count bars may reach up to."""
        return self.bottom - (self.bottom - self.top) * BAR_BAND


def _day_label(d: date, long_range: bool) -> str:
    return d.strftime("%b %Y") if long_range else f"{d.day} {d.strftime('%b')}"


def rate_chart(days: Sequence[DayRating], start: date, end: date) -> Chart:
    """The rolling 👍 rate on a time axis from `start` to `end` (UTC days), daily counts below.

    `days` may begin up to ROLLING_DAYS - 1 days before `start`: those days count in the
    rolling rate of the first days shown, and are not drawn themselves.
    """
    chart = Chart()
    span = max((end - start).days, 0)
    plot_w = chart.right - chart.left
    plot_h = chart.bottom - chart.top

    def x_of(d: date) -> float:
        if span == 0:
            return chart.left + plot_w / 2
        return chart.left + (d - start).days / span * plot_w

    for pct in (0, 25, 50, 75, 100):
        chart.y_ticks.append(Tick(chart.top + (1 - pct / 100) * plot_h, f"{pct}%"))
    count = min(MAX_X_LABELS, span + 1)
    seen: set[int] = set()
    for k in range(count):
        offset = round(k * span / (count - 1)) if count > 1 else 0
        if offset in seen:
            continue
        seen.add(offset)
        d = date.fromordinal(start.toordinal() + offset)
        chart.x_ticks.append(Tick(x_of(d), _day_label(d, span > 180)))

    by_day = {date.fromisoformat(r.day): r for r in days}
    shown = [r for d, r in by_day.items() if start <= d <= end and r.total]
    chart.max_daily = max((r.total for r in shown), default=0)
    bar_w = max(1.5, min(14.0, plot_w / (span + 1) * 0.7))
    band = plot_h * BAR_BAND
    run: list[tuple[float, float]] = []
    for offset in range(span + 1):
        d = date.fromordinal(start.toordinal() + offset)
        window = [by_day.get(date.fromordinal(d.toordinal() - k)) for k in range(ROLLING_DAYS)]
        ups = sum(r.ups for r in window if r is not None)
        total = sum(r.total for r in window if r is not None)
        if total == 0:
            if run:
                chart.lines.append(run)
                run = []
            continue
        x = x_of(d)
        y = chart.top + (1 - ups / total) * plot_h
        run.append((x, y))
        today = by_day.get(d)
        if today is None or today.total == 0:
            continue
        chart.points.append(
            ChartPoint(
                day=today.day,
                x=x,
                y=y,
                size=_size(total),
                rate=ups / total,
                ups=ups,
                total=total,
                day_ups=today.ups,
                day_total=today.total,
            )
        )
        height = max(2.0, today.total / chart.max_daily * band)
        chart.bars.append(
            Bar(today.day, x - bar_w / 2, chart.bottom - height, bar_w, height, today.total)
        )
    if run:
        chart.lines.append(run)
    return chart
