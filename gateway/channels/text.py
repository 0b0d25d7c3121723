"""Splitting a long answer into messages a platform accepts, at paragraph or line boundaries.

`split_text` cuts plain text (LINE); `split_message` also understands Markdown code fences
(Telegram). Neither separates an emoji or a letter from its modifiers. In `split_message`,
paragraphs are kept whole when they fit, then lines, then words; only a single word longer
than a message is cut mid-word. A fenced code block (```) is never split while it fits in one
message; one that does not is cut at line boundaries and every piece is closed and reopened
with the same fence, so each message renders on its own.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

from gateway.i18n import N_

Length = Callable[[str], int]

MAX_ANSWER_PARTS = 5
"""The most messages one answer becomes: on LINE that is one reply call, and no push."""
CUT_NOTE = N_("✂️ Answer cut: it was too long to send in full.")

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
# Tried in order; a boundary in the first half of the allowed window is too early to be worth it.
_SEPARATORS = ("\n\n", "\n", " ")


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units, the unit Telegram and LINE count message limits in."""
    return len(text.encode("utf-16-le")) // 2


def split_text(text: str, limit: int, length: Length = len) -> list[str]:
    """Plain-text parts of at most `limit` (by `length`), cut between paragraphs, lines or words."""
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


def _boundary(text: str, fit: int) -> tuple[int, int]:
    """Where to cut within text[:fit], and how many separator characters to drop there."""
    for sep in _SEPARATORS:
        at = text.rfind(sep, 0, fit + len(sep))
        if at > fit // 2 and text[:at].strip():
            return at, len(sep)
    return _grapheme_safe(text, fit), 0


def split_message(text: str, limit: int, length: Length = len) -> list[str]:
    """Parts of `text`, each at most `limit` long by `length`, in order."""
    if limit < 16:
        raise ValueError("limit is too small to split a message sensibly")
    pieces: list[tuple[str, str]] = []  # (separator before, text); each fits on its own
    for sep, block, fence in _blocks(text):
        if length(block) <= limit:
            pieces.append((sep, block))
        elif fence is not None:
            pieces.extend(_first_sep(sep, _split_code(block, fence, limit, length)))
        else:
            pieces.extend(_first_sep(sep, _split_prose(block, limit, length)))
    parts: list[str] = []
    current = ""
    for sep, piece in pieces:
        if current and length(current + sep + piece) <= limit:
            current += sep + piece
            continue
        if current:
            parts.append(current)
        current = piece
    if current:
        parts.append(current)
    return parts


def _blocks(text: str) -> list[tuple[str, str, str | None]]:
    """Paragraphs and fenced code blocks as (separator before, text, opening fence or None)."""
    lines = text.replace("\r\n", "\n").split("\n")
    blocks: list[tuple[str, str, str | None]] = []
    paragraph: list[str] = []
    blank = False

    def add(block: str, fence: str | None) -> None:
        nonlocal blank
        sep = "" if not blocks else "\n\n" if blank else "\n"
        blocks.append((sep, block, fence))
        blank = False

    i = 0
    while i < len(lines):
        line = lines[i]
        opening = _FENCE.match(line)
        if opening is None:
            if line.strip():
                paragraph.append(line.rstrip())
            else:
                if paragraph:
                    add("\n".join(paragraph), None)
                    paragraph = []
                blank = bool(blocks)
            i += 1
            continue
        if paragraph:
            add("\n".join(paragraph), None)
            paragraph = []
        marker = opening.group(1)
        end = i + 1
        while end < len(lines) and not _closes(lines[end], marker):
            end += 1
        add("\n".join(lines[i : end + 1]), line.strip())
        i = end + 1
    if paragraph:
        add("\n".join(paragraph), None)
    return blocks


def _closes(line: str, marker: str) -> bool:
    stripped = line.strip()
    return (
        len(stripped) >= len(marker)
        and set(stripped) == {marker[0]}
        and len(line) - len(line.lstrip(" ")) <= 3
    )


def _first_sep(sep: str, pieces: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The block's own separator goes before its first piece."""
    return [(sep, pieces[0][1]), *pieces[1:]] if pieces else []


def _split_prose(block: str, limit: int, length: Length) -> list[tuple[str, str]]:
    """Lines, then words, then characters of a paragraph too long for one message."""
    pieces: list[tuple[str, str]] = []
    for line in block.split("\n"):
        if length(line) <= limit:
            pieces.append(("\n", line))
            continue
        sep = "\n"
        for word in line.split(" "):
            chunks = _cut(word, limit, length)
            pieces.append((sep, chunks[0]))
            pieces.extend(("", chunk) for chunk in chunks[1:])  # a cut word joins without space
            sep = " "
    return pieces


def _split_code(block: str, fence: str, limit: int, length: Length) -> list[tuple[str, str]]:
    """A code block too long for one message, as several fenced blocks."""
    lines = block.split("\n")
    marker = _FENCE.match(fence)
    closing = marker.group(1) if marker else "```"
    body = lines[1:-1] if len(lines) > 1 and _closes(lines[-1], closing) else lines[1:]
    head, tail = fence + "\n", "\n" + closing
    budget = max(1, limit - length(head) - length(tail))
    chunks: list[str] = []
    current: str | None = None
    for line in body:
        for piece in _cut(line, budget, length):
            if current is not None and length(current + "\n" + piece) <= budget:
                current += "\n" + piece
                continue
            if current is not None:
                chunks.append(current)
            current = piece
    if current is not None:
        chunks.append(current)
    return [("\n", head + chunk + tail) for chunk in chunks or [""]]


def _cut(text: str, limit: int, length: Length) -> list[str]:
    """`text` in consecutive chunks of at most `limit` (never empty: "" gives [""])."""
    chunks: list[str] = []
    while length(text) > limit:
        at = _grapheme_safe(text, _fitting_prefix(text, limit, length))
        chunks.append(text[:at])
        text = text[at:]
    chunks.append(text)
    return chunks


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


def _grapheme_safe(text: str, cut: int) -> int:
    """Move a hard cut back so it does not separate an emoji or letter from its modifiers."""
    at = cut
    while 1 < at < len(text) and (_joins_previous(text[at]) or text[at - 1] == "\u200d"):
        at -= 1
    return at


def _joins_previous(char: str) -> bool:
    return (
        unicodedata.category(char).startswith("M")
        or char in ("\u200d", "\ufe0f", "\ufe0e")
        or "\U0001f3fb" <= char <= "\U0001f3ff"  # skin tone modifiers
    )


def capped(
    split: Callable[[str], list[str]],
    text: str,
    limit: int,
    length: Length = len,
    max_parts: int = MAX_ANSWER_PARTS,
    note: str = CUT_NOTE,
) -> list[str]:
    """`split(text)`, at most `max_parts` parts; a longer answer ends with `note` (CUT_NOTE).

    Only a prefix that fills `max_parts + 1` parts is split (a part holds at most `limit`
    characters), so the work is bounded however long the answer is.
    """
    window = text[: (max_parts + 1) * limit]
    parts = split(window)
    if len(parts) <= max_parts and len(window) == len(text):
        return parts
    kept = parts[:max_parts] or [""]
    room = limit - length(note) - 2
    last = kept[-1]
    if length(last) > room:
        last = split_text(last, room, length)[0]
    kept[-1] = f"{last}\n\n{note}" if last.strip() else note
    return kept
