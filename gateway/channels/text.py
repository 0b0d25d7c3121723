"""Splitting long text into messages a platform accepts, at the most natural boundary."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable

Length = Callable[[str], int]

# Tried in order; a boundary in the first half of the allowed window is too early to be worth it.
_SEPARATORS = ("\n\n", "\n", " ")


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units, the way LINE and Telegram count (an emoji is 2)."""
    return len(text.encode("utf-16-le")) // 2


def split_text(text: str, limit: int, length: Length = len) -> list[str]:
    """Parts of at most `limit` (measured by `length`), cut between paragraphs, lines or words."""
    if limit < 1:
        raise ValueError("limit must be positive")
    parts: list[str] = []
    rest = text.strip()
    while rest:
        if length(rest) <= limit:
            parts.append(rest)
            break
        fit = _fitting_prefix(rest, limit, length)
        cut, skip = _boundary(rest, fit)
        if part := rest[:cut].rstrip():
            parts.append(part)
        rest = rest[cut + skip :].lstrip()
    return parts


def _fitting_prefix(text: str, limit: int, length: Length) -> int:
    """The largest n such that text[:n] fits; at least 1 so that splitting always progresses."""
    low, high = 1, len(text)
    while low < high:
        mid = (low + high + 1) // 2
        if length(text[:mid]) <= limit:
            low = mid
        else:
            high = mid - 1
    return low


def _boundary(text: str, fit: int) -> tuple[int, int]:
    """Where to cut within text[:fit], and how many separator characters to drop there."""
    for sep in _SEPARATORS:
        at = text.rfind(sep, 0, fit + len(sep))
        if at > fit // 2 and text[:at].strip():
            return at, len(sep)
    return _grapheme_safe(text, fit), 0


def _grapheme_safe(text: str, cut: int) -> int:
    """Move a hard cut back so it does not separate an emoji or letter from its modifiers."""
    at = cut
    while at > 1 and (_joins_previous(text[at]) or text[at - 1] == "\u200d"):
        at -= 1
    return at


def _joins_previous(char: str) -> bool:
    return (
        unicodedata.category(char).startswith("M")
        or char in ("\u200d", "\ufe0f", "\ufe0e")
        or "\U0001f3fb" <= char <= "\U0001f3ff"  # skin tone modifiers
    )
