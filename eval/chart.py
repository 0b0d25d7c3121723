"""The run as an SVG chart: 👍 rate per cycle above, what happened to proposals below.

Written by hand (no plotting library): plain SVG 1.1 that browsers, GitHub and
image viewers render alike, and that diffs line by line between runs.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape

from eval.figures import Result

WIDTH, HEIGHT = 760, 500
LEFT, RIGHT = 64, 24
LEGEND = 72
RATE_TOP, RATE_BOTTOM = 110, 300
BAR_TOP, BAR_BOTTOM = 376, 450
TRAINING, HELD_OUT = "#2563eb", "#ea580c"
APPROVED, REJECTED, SUPPRESSED, NOTE = "#16a34a", "#dc2626", "#9ca3af", "#7c3aed"
FONT = 'font-family="Helvetica, Arial, sans-serif"'


def _text(
    x: float, y: float, text: str, *, size: int = 12, anchor: str = "middle", **attrs: str
) -> str:
    extra = "".join(f' {k.replace("_", "-")}="{v}"' for k, v in attrs.items())
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}"{extra}>'
        f"{escape(text)}</text>"
    )


def render(result: Result) -> str:
    """The chart of a run as an SVG document."""
    slots = len(result.cycles) + 1  # every cycle, then the final measurement
    step = (WIDTH - LEFT - RIGHT) / slots

    def x(slot: int) -> float:
        return LEFT + step * (slot + 0.5)

    def y(rate: float) -> float:
        return RATE_BOTTOM - rate * (RATE_BOTTOM - RATE_TOP)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}"'
        f' viewBox="0 0 {WIDTH} {HEIGHT}" {FONT} role="img">',
        "<title>Thumbs-up rate per learning cycle</title>",
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>',
        _text(LEFT, 28, "👍 rate per cycle", size=16, anchor="start", font_weight="bold"),
        _text(
            LEFT,
            48,
            f"{result.config.world} world, seed {result.config.seed}, model {result.model},"
            f" holdout {result.config.skill_holdout:g};"
            " each cycle: conversations, synthesis, review, restart",
            size=11,
            anchor="start",
            fill="#4b5563",
        ),
    ]
    for tick in range(0, 101, 25):
        ty = y(tick / 100)
        out.append(
            f'<line x1="{LEFT}" y1="{ty:.1f}" x2="{WIDTH - RIGHT}" y2="{ty:.1f}"'
            f' stroke="#e5e7eb" stroke-width="1"/>'
        )
        out.append(_text(LEFT - 8, ty + 4, f"{tick}%", size=11, anchor="end", fill="#4b5563"))
    training = [(x(s.cycle - 1), y(s.up_rate)) for s in result.cycles if s.up_rate is not None]
    held = [(x(h.after), y(h.rate)) for h in result.held_out]
    out += _series(training, TRAINING)
    out += _series(held, HELD_OUT)
    rates = {s.cycle - 1: s.up_rate for s in result.cycles}
    for (px, py), h in zip(held, result.held_out, strict=True):
        # The label goes on the side away from the other line.
        other = rates.get(h.after)
        below = other is not None and other > h.rate
        out.append(
            _text(px, py + 16 if below else py - 10, f"{h.rate:.0%}", size=10, fill=HELD_OUT)
        )
    out += _proposals(result, x, step)
    for slot in range(slots):
        label = str(slot + 1) if slot < len(result.cycles) else "after"
        out.append(_text(x(slot), BAR_BOTTOM + 18, label, size=11, fill="#374151"))
    out.append(_text((LEFT + WIDTH - RIGHT) / 2, BAR_BOTTOM + 38, "cycle", size=11, fill="#374151"))
    out += _legend()
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _series(points: list[tuple[float, float]], colour: str) -> list[str]:
    if not points:
        return []
    path = " ".join(f"{px:.1f},{py:.1f}" for px, py in points)
    lines = [f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2.5"/>']
    lines += [f'<circle cx="{px:.1f}" cy="{py:.1f}" r="4" fill="{colour}"/>' for px, py in points]
    return lines


def _proposals(result: Result, x: Callable[[int], float], step: float) -> list[str]:
    """Stacked bars per cycle: approved, rejected, suppressed as repeats of a rejection."""
    rows = [(s.cycle - 1, s.approved, s.rejected, s.repeats_suppressed) for s in result.cycles]
    notes: dict[int, list[str]] = {}
    for p in result.proposals:
        note = None
        if p.slip:
            note = "reviewer error"
        elif p.kind == "retire":
            note = "retired" if p.status == "approved" else "retire refused"
        if note:
            notes.setdefault(p.cycle - 1, []).append(note)
    most = max((a + r + sup for _, a, r, sup in rows), default=0) or 1
    unit = (BAR_BOTTOM - BAR_TOP) / most
    out = [
        _text(LEFT, BAR_TOP - 46, "proposals per cycle", size=12, anchor="start", fill="#374151"),
        f'<line x1="{LEFT}" y1="{BAR_BOTTOM}" x2="{WIDTH - RIGHT}" y2="{BAR_BOTTOM}"'
        ' stroke="#9ca3af" stroke-width="1"/>',
    ]
    width = min(28.0, step * 0.5)
    for slot, approved, rejected, suppressed in rows:
        base: float = BAR_BOTTOM
        for count, colour in ((approved, APPROVED), (rejected, REJECTED), (suppressed, SUPPRESSED)):
            if not count:
                continue
            top = base - count * unit
            out.append(
                f'<rect x="{x(slot) - width / 2:.1f}" y="{top:.1f}" width="{width:.1f}"'
                f' height="{base - top:.1f}" fill="{colour}"/>'
            )
            base = top
        total = approved + rejected + suppressed
        if total:
            out.append(_text(x(slot), base - 4, str(total), size=10, fill="#374151"))
            base -= 14
        for note in notes.get(slot, []):
            out.append(_text(x(slot), base - 4, note, size=10, fill=NOTE))
            base -= 13
    return out


def _legend() -> list[str]:
    items = [
        (TRAINING, "line", "training users (their 👍 presses)"),
        (HELD_OUT, "line", "held-out users (would press 👍), before and after"),
        (APPROVED, "box", "approved"),
        (REJECTED, "box", "rejected"),
        (SUPPRESSED, "box", "suppressed: repeat of a rejection"),
    ]
    out = []
    lx: float = LEFT
    ly = LEGEND
    for colour, shape, label in items:
        if shape == "line":
            out.append(
                f'<line x1="{lx}" y1="{ly - 4}" x2="{lx + 18}" y2="{ly - 4}" stroke="{colour}"'
                ' stroke-width="2.5"/>'
            )
        else:
            out.append(f'<rect x="{lx + 4}" y="{ly - 10}" width="10" height="10" fill="{colour}"/>')
        out.append(_text(lx + 24, ly, label, size=11, anchor="start", fill="#374151"))
        lx += 24 + 6.2 * len(label) + 18
        if lx > WIDTH - 160:
            lx, ly = LEFT, ly + 18
    return out
