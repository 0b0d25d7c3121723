"""The side-by-side diff rows and the feedback chart's geometry."""

from __future__ import annotations

from datetime import date

from gateway.admin.console_chart import rate_chart
from gateway.admin.console_diff import side_by_side
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


def test_the_chart_puts_each_day_on_a_time_axis_and_keeps_gaps() -> None:
    days = [
        DayRating(day="2025-05-01", ups=1, downs=1),
        DayRating(day="2025-05-02", ups=3, downs=0),
        DayRating(day="2025-05-10", ups=0, downs=2),
        DayRating(day="2025-04-01", ups=5, downs=0),  # before the window
    ]
    chart = rate_chart(days, date(2025, 5, 1), date(2025, 5, 11))
    assert [p.day for p in chart.points] == ["2025-05-01", "2025-05-02", "2025-05-10"]
    first, second, last = chart.points
    assert first.x == chart.left and chart.left < last.x < chart.right
    step = second.x - first.x
    assert round((last.x - first.x) / step) == 9  # eight empty days stay empty
    assert (first.y, second.y, last.y) == (
        (chart.top + chart.bottom) / 2,
        chart.top,
        chart.bottom,
    )
    assert [t.label for t in chart.y_ticks] == ["0%", "25%", "50%", "75%", "100%"]
    assert chart.x_ticks[0].label == "1 May" and chart.x_ticks[-1].label == "11 May"
    assert chart.polyline.count(",") == 3

    single = rate_chart(
        [DayRating(day="2025-05-01", ups=1, downs=0)], date(2025, 5, 1), date(2025, 5, 1)
    )
    assert single.points[0].x == (single.left + single.right) / 2
