"""The 👍-rate-per-day chart: SVG geometry computed here, drawn by the template."""

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


@dataclass(frozen=True)
class ChartPoint:
    """One day with ratings."""

    day: str
    x: float
    y: float
    size: int
    rate: float
    ups: int
    total: int

    @property
    def r(self) -> float:
        return 3.0 + self.size


def _size(total: int) -> int:
    """1 to 4: how many ratings a point stands for, on a log scale."""
    return min(4, 1 + int(math.log2(total) / 1.5)) if total > 0 else 1


@dataclass(frozen=True)
class Tick:
    """A gridline or axis label position."""

    at: float
    label: str


@dataclass
class Chart:
    """Everything the template needs to draw the chart."""

    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    right: int = WIDTH - RIGHT
    top: int = TOP
    bottom: int = HEIGHT - BOTTOM
    points: list[ChartPoint] = field(default_factory=list)
    x_ticks: list[Tick] = field(default_factory=list)
    y_ticks: list[Tick] = field(default_factory=list)

    @property
    def polyline(self) -> str:
        return " ".join(f"{p.x:.1f},{p.y:.1f}" for p in self.points)


def _day_label(d: date, long_range: bool) -> str:
    return d.strftime("%b %Y") if long_range else f"{d.day} {d.strftime('%b')}"


def rate_chart(days: Sequence[DayRating], start: date, end: date) -> Chart:
    """Points on a time axis from `start` to `end` (UTC days); gaps stay gaps."""
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
    for row in days:
        d = date.fromisoformat(row.day)
        if not start <= d <= end or row.total == 0:
            continue
        chart.points.append(
            ChartPoint(
                day=row.day,
                x=x_of(d),
                y=chart.top + (1 - row.rate) * plot_h,
                size=_size(row.total),
                rate=row.rate,
                ups=row.ups,
                total=row.total,
            )
        )
    return chart
