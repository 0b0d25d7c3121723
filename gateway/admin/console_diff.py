"""Side-by-side diff rows for the console, from difflib's opcodes."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Literal

RowKind = Literal["equal", "replace", "delete", "insert"]
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
    """One side of a row: a line number and its text in segments."""

    number: int
    segments: tuple[Segment, ...]


@dataclass(frozen=True)
class DiffRow:
    """A row of the side-by-side view; a missing side is None."""

    kind: RowKind
    left: Cell | None
    right: Cell | None


@dataclass
class SideBySide:
    """The rows and how many lines were added and removed."""

    rows: list[DiffRow] = field(default_factory=list)
    added: int = 0
    removed: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed)


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


def _whole(number: int, text: str) -> Cell:
    return Cell(number, (Segment(text),))


def side_by_side(old: str, new: str) -> SideBySide:
    """Rows pairing the old and new texts line by line; similar changed lines carry word marks."""
    a, b = old.splitlines(), new.splitlines()
    out = SideBySide()
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                out.rows.append(DiffRow("equal", _whole(i + 1, a[i]), _whole(j + 1, b[j])))
            continue
        out.removed += i2 - i1
        out.added += j2 - j1
        paired = min(i2 - i1, j2 - j1)
        for k in range(paired):
            i, j = i1 + k, j1 + k
            left, right = _inline(a[i], b[j])
            out.rows.append(DiffRow("replace", Cell(i + 1, left), Cell(j + 1, right)))
        for i in range(i1 + paired, i2):
            out.rows.append(DiffRow("delete", _whole(i + 1, a[i]), None))
        for j in range(j1 + paired, j2):
            out.rows.append(DiffRow("insert", None, _whole(j + 1, b[j])))
    return out
