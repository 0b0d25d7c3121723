"""The side-by-side diff rows and the feedback chart's geometry."""

from __future__ import annotations

from datetime import date

from gateway.admin.console_chart import rate_chart
from gateway.admin.console_diff import CONTEXT, side_by_side
from gateway.store.console import DayRating


def test_rows_pair_changed_lines_and_mark_the_words_that_differ() -> None:
    old = "# Title\nKeep answers short.\nUse lists.\nNo tables.\nEnd."
    new = "# Title\nKeep answers very short.\nEnd.\nA new closing line."
    diff = side_by_side(old, new)
    kinds = [row.kind for row in diff.rows]
    assert kinds == ["equal", "replace", "delete", "delete", "equal", "insert"]
    assert (diff.added, diff.removed) == (2, 3)

    changed = diff.rows[1]
    assert changed.left is not None and changed.right is not None
    assert (changed.left.number, changed.right.number) == (2, 2)
    marked = [s.text for s in changed.right.segments if s.changed]
    assert marked == ["very "]
    assert "".join(s.text for s in changed.right.segments) == "Keep answers very short."

    deleted = diff.rows[2]
    assert deleted.right is None and deleted.left is not None and deleted.left.number == 3
    inserted = diff.rows[-1]
    assert inserted.left is None and inserted.right is not None and inserted.right.number == 4


def test_unrelated_replaced_lines_get_no_word_marks_and_equal_texts_no_changes() -> None:
    diff = side_by_side("alpha beta gamma", "0123456789")
    [row] = diff.rows
    assert row.kind == "replace"
    assert row.left is not None and not any(s.changed for s in row.left.segments)
    assert not side_by_side("same\ntext", "same\ntext").changed
    created = side_by_side("", "one\ntwo")
    assert [r.kind for r in created.rows] == ["insert", "insert"] and created.added == 2


def test_the_chart_draws_a_rolling_seven_day_rate_over_daily_counts() -> None:
    days = [
        DayRating(day="2025-04-01", ups=5, downs=0),  # long before the window: not counted
        DayRating(day="2025-04-28", ups=0, downs=4),  # before the window, counted on 1-4 May
        DayRating(day="2025-05-01", ups=1, downs=1),
        DayRating(day="2025-05-02", ups=3, downs=0),
        DayRating(day="2025-05-10", ups=0, downs=2),
    ]
    chart = rate_chart(days, date(2025, 5, 1), date(2025, 5, 11))
    assert [p.day for p in chart.points] == ["2025-05-01", "2025-05-02", "2025-05-10"]
    first, second, last = chart.points
    assert (first.ups, first.total, first.day_total) == (1, 6, 2)  # 28 April counts too
    assert (second.ups, second.total, second.day_ups) == (4, 9, 3)
    assert (last.rate, last.total) == (0.0, 2)  # 1-2 May are more than 7 days before
    assert first.x == chart.left and chart.left < last.x < chart.right
    step = second.x - first.x
    assert round((last.x - first.x) / step) == 9
    height = chart.bottom - chart.top
    assert first.y == chart.top + (1 - 1 / 6) * height and last.y == chart.bottom
    # The line runs while the last 7 days had ratings: 1-8 May, then 10-11 May.
    assert [len(run) for run in chart.lines] == [8, 2]
    assert len(chart.polylines) == 2
    assert [(b.day, b.total) for b in chart.bars] == [
        ("2025-05-01", 2),
        ("2025-05-02", 3),
        ("2025-05-10", 2),
    ]
    assert chart.max_daily == 3
    tallest = max(chart.bars, key=lambda b: b.height)
    assert tallest.day == "2025-05-02" and tallest.y == chart.band_top
    assert [t.label for t in chart.y_ticks] == ["0%", "25%", "50%", "75%", "100%"]
    assert chart.x_ticks[0].label == "1 May" and chart.x_ticks[-1].label == "11 May"

    single = rate_chart(
        [DayRating(day="2025-05-01", ups=1, downs=0)], date(2025, 5, 1), date(2025, 5, 1)
    )
    assert single.points[0].x == (single.left + single.right) / 2


LIVE = """---
name: writing
description: 'Format answers: short and plain.'
metadata:
  source: auto
  proposal: 3
  based_on:
  - 1
  model: m-1
  generated_at: '2025-01-01T00:00:00Z'
  review: approved
---

# Writing
""" + "".join(f"Line {n}.\n" for n in range(1, 21))


def test_bookkeeping_and_a_requoted_description_are_not_changes() -> None:
    proposed = LIVE.replace(
        "'Format answers: short and plain.'", '"Format answers: short and plain."'
    )
    proposed = proposed.replace("proposal: 3", "proposal: 9").replace("m-1", "m-2")
    proposed = proposed.replace("Line 12.", "Line twelve.")
    diff = side_by_side(LIVE, proposed)
    assert (diff.added, diff.removed) == (1, 1)
    [changed] = [r for r in diff.rows if r.kind == "replace"]
    assert changed.left is not None and changed.right is not None
    # Body lines keep their numbers in the file; the rewritten frontmatter has none.
    assert (changed.left.number, changed.right.number) == (26, 26)
    assert {(b.key, b.old, b.new) for b in diff.bookkeeping if b.changed} == {
        ("proposal", "3", "9"),
        ("model", "m-1", "m-2"),
    }
    assert not any("proposal" in s.text for r in diff.rows if r.right for s in r.right.segments)


def test_changed_lines_far_apart_are_separate_hunks_with_the_unchanged_count_between() -> None:
    proposed = LIVE.replace("Line 2.", "Line two.").replace("Line 18.", "Line eighteen.")
    diff = side_by_side(LIVE, proposed)
    gaps = [r.hidden for r in diff.rows if r.kind == "gap"]
    # Folded: the 7 frontmatter rows before the first change (beyond its context), and
    # body lines 3-17 less the context kept on each side; lines 19-20 are context.
    assert gaps == [7, 15 - 2 * CONTEXT]
    assert sum(1 for r in diff.rows if r.folded) == sum(gaps)
    assert all(r.kind == "equal" for r in diff.rows if r.folded)
    unified = diff.unified
    assert [u.mark for u in unified if u.mark in "-+"] == ["-", "+", "-", "+"]
    removed = [(u.old, u.new) for u in unified if u.mark == "-"]
    added = [(u.old, u.new) for u in unified if u.mark == "+"]
    assert removed == [(16, None), (32, None)] and added == [(None, 16), (None, 32)]
    same = next(u for u in unified if u.mark == " " and u.old == 15)
    assert same.new == 15


def test_a_new_skill_is_its_text_alone() -> None:
    diff = side_by_side("", LIVE)
    assert diff.created and diff.removed == 0
    assert all(r.kind == "insert" and r.left is None for r in diff.rows)
    assert [b.key for b in diff.bookkeeping] == [
        "proposal",
        "based_on",
        "model",
        "generated_at",
        "review",
    ]
