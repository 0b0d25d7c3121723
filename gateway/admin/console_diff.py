"""Diff rows for the console, from difflib's opcodes: side by side, unified, or a new text alone.

A SKILL.md's frontmatter is compared by meaning, not by spelling: both sides are
written out the same way, so a YAML re-quoting of `description` is no change, and
the bookkeeping keys (`proposal`, `based_on`, `model`, `generated_at`, `review`,
`approved_by`, `approved_at`) are listed apart and never counted.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any, Literal

from gateway.errors import InvalidSkill
from gateway.review.staging import APPROVAL_KEYS, PROVENANCE_KEYS
from gateway.skills.library import parse_skill

RowKind = Literal["equal", "replace", "delete", "insert", "gap"]
BOOKKEEPING = (*PROVENANCE_KEYS, *APPROVAL_KEYS)
CONTEXT = 2
"""Unchanged lines kept around a change when "Only changed lines" folds the rest."""
# Below this similarity two paired lines get no word-level marks: on unrelated lines they
# are noise, and the row's colour already says the whole line changed.
_INLINE_RATIO = 0.4


@dataclass(frozen=True)
class Segment:
    """A run of a line's text; `changed` runs are highlighted."""

    text: str
    changed: bool = False


@dataclass(frozen=True)
class Cell:
    """One side of a row: a line number (None in the rewritten frontmatter) and its text."""

    number: int | None
    segments: tuple[Segment, ...]


@dataclass(frozen=True)
class DiffRow:
    """A row of the side-by-side view; a missing side is None.

    A `gap` row stands for `hidden` unchanged lines that "Only changed lines" folds;
    a `folded` equal row is one of them.
    """

    kind: RowKind
    left: Cell | None
    right: Cell | None
    folded: bool = False
    hidden: int = 0


@dataclass(frozen=True)
class UnifiedRow:
    """A row of the stacked view: `-` old, `+` new, ` ` both, or a gap."""

    mark: Literal["-", "+", " ", "gap"]
    old: int | None
    new: int | None
    segments: tuple[Segment, ...]
    folded: bool = False
    hidden: int = 0


@dataclass(frozen=True)
class Bookkeeping:
    """A bookkeeping key of the frontmatter, before and after; never counted as a change."""

    key: str
    old: str | None
    new: str | None

    @property
    def changed(self) -> bool:
        return self.old != self.new


@dataclass
class SideBySide:
    """The rows, the bookkeeping apart, and how many lines were added and removed."""

    rows: list[DiffRow] = field(default_factory=list)
    bookkeeping: list[Bookkeeping] = field(default_factory=list)
    added: int = 0
    removed: int = 0
    created: bool = False
    """Nothing before: the view is the new text alone."""

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed)

    @property
    def unified(self) -> list[UnifiedRow]:
        """The same rows for one column: old lines above new ones, each with its own number."""
        merged: list[UnifiedRow] = []
        olds: list[UnifiedRow] = []
        news: list[UnifiedRow] = []
        for row in self.rows:
            if row.kind in ("equal", "gap"):
                # A run of changed rows ends: all its old lines, then all its new ones.
                merged.extend(olds + news)
                olds, news = [], []
                if row.kind == "gap":
                    merged.append(UnifiedRow("gap", None, None, (), hidden=row.hidden))
                else:
                    assert row.left is not None and row.right is not None
                    merged.append(
                        UnifiedRow(
                            " ", row.left.number, row.right.number, row.right.segments, row.folded
                        )
                    )
                continue
            if row.left is not None:
                olds.append(UnifiedRow("-", row.left.number, None, row.left.segments))
            if row.right is not None:
                news.append(UnifiedRow("+", None, row.right.number, row.right.segments))
        return merged + olds + news


def _inline(old: str, new: str) -> tuple[tuple[Segment, ...], tuple[Segment, ...]]:
    """The two versions of a changed line, with the differing runs marked."""
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    if matcher.ratio() < _INLINE_RATIO:
        return (Segment(old),), (Segment(new),)
    left: list[Segment] = []
    right: list[Segment] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        same = tag == "equal"
        if i2 > i1:
            left.append(Segment(old[i1:i2], not same))
        if j2 > j1:
            right.append(Segment(new[j1:j2], not same))
    return tuple(left), tuple(right)


Line = tuple[int | None, str]
"""A line to compare: its number in the file (None where the frontmatter was rewritten)."""


def _value(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


def _split(text: str) -> tuple[list[Line], dict[str, Any]] | None:
    """A SKILL.md as comparable lines and its bookkeeping; None when it does not parse."""
    try:
        skill = parse_skill(text)
    except InvalidSkill:
        return None
    metadata = {k: v for k, v in skill.metadata.items() if k not in BOOKKEEPING}
    kept = {k: v for k, v in skill.metadata.items() if k in BOOKKEEPING}
    front: dict[str, Any] = {"name": skill.name, "description": skill.description}
    if metadata:
        front["metadata"] = metadata
    import yaml  # with its first use, like the rest of skill parsing

    head = yaml.safe_dump(front, sort_keys=False, allow_unicode=True, width=1000).strip()
    lines: list[Line] = [(None, "---"), *((None, h) for h in head.splitlines()), (None, "---")]
    all_lines = text.splitlines()
    body = skill.body.strip().splitlines()
    # The body's numbers are the file's: it is the last part of the file, after the frontmatter.
    first = len(all_lines) - len(body) + 1
    while first > 1 and body and all_lines[first - 1] != body[0]:
        first -= 1
    lines.append((None, ""))
    lines.extend((first + k, b) for k, b in enumerate(body))
    return lines, kept


def _lines(text: str) -> list[Line]:
    return [(k + 1, line) for k, line in enumerate(text.splitlines())]


def side_by_side(old: str, new: str) -> SideBySide:
    """Rows pairing the old and new texts line by line; similar changed lines carry word marks."""
    out = SideBySide(created=not old.strip())
    a, b = _lines(old), _lines(new)
    split_a, split_b = _split(old), _split(new)
    if split_b is not None and (split_a is not None or out.created):
        b, kept_b = split_b
        a, kept_a = split_a if split_a is not None else ([], {})
        out.bookkeeping = [
            Bookkeeping(k, _value(kept_a.get(k)), _value(kept_b.get(k)))
            for k in BOOKKEEPING
            if k in kept_a or k in kept_b
        ]
    matcher = difflib.SequenceMatcher(None, [t for _, t in a], [t for _, t in b], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                out.rows.append(DiffRow("equal", _whole(a[i]), _whole(b[j])))
            continue
        out.removed += i2 - i1
        out.added += j2 - j1
        paired = min(i2 - i1, j2 - j1)
        for k in range(paired):
            (na, ta), (nb, tb) = a[i1 + k], b[j1 + k]
            left, right = _inline(ta, tb)
            out.rows.append(DiffRow("replace", Cell(na, left), Cell(nb, right)))
        for i in range(i1 + paired, i2):
            out.rows.append(DiffRow("delete", _whole(a[i]), None))
        for j in range(j1 + paired, j2):
            out.rows.append(DiffRow("insert", None, _whole(b[j])))
    out.rows = _fold(out.rows)
    return out


def _whole(line: Line) -> Cell:
    return Cell(line[0], (Segment(line[1]),))


def _fold(rows: list[DiffRow]) -> list[DiffRow]:
    """Mark unchanged lines far from any change as folded, with a gap row before each run."""
    near = [False] * len(rows)
    for k, row in enumerate(rows):
        if row.kind != "equal":
            for m in range(max(0, k - CONTEXT), min(len(rows), k + CONTEXT + 1)):
                near[m] = True
    out: list[DiffRow] = []
    k = 0
    while k < len(rows):
        if rows[k].kind != "equal" or near[k]:
            out.append(rows[k])
            k += 1
            continue
        end = k
        while end < len(rows) and rows[end].kind == "equal" and not near[end]:
            end += 1
        out.append(DiffRow("gap", None, None, hidden=end - k))
        out.extend(DiffRow(r.kind, r.left, r.right, folded=True) for r in rows[k:end])
        k = end
    return out
