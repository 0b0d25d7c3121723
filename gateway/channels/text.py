"""Splitting a long answer into messages a platform accepts, at paragraph or line boundaries.

Paragraphs are kept whole when they fit, then lines, then words; only a single word longer
than a message is cut mid-word. A fenced code block (```) is never split while it fits in one
message; one that does not is cut at line boundaries and every piece is closed and reopened
with the same fence, so each message renders on its own.
"""

from __future__ import annotations

import re
from collections.abc import Callable

Length = Callable[[str], int]

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units, the unit Telegram and LINE count message limits in."""
    return len(text.encode("utf-16-le")) // 2


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
        low, high = 1, len(text)
        while low < high:  # the longest prefix that fits
            mid = (low + high + 1) // 2
            if length(text[:mid]) <= limit:
                low = mid
            else:
                high = mid - 1
        chunks.append(text[:low])
        text = text[low:]
    chunks.append(text)
    return chunks
