"""The model's Markdown as Telegram HTML: every text escaped, only tags Telegram knows, balanced.

Markup is produced only around already-escaped text, so the result is well formed by
construction; a marker that does not pair up stays visible as the character it is. What
Telegram cannot render (tables, images) is left as text. Each answer is split first (see
`gateway.channels.text`) and every part rendered on its own, so no tag spans two messages.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html import escape

from gateway.channels.api import CUT_NOTE, capped, split_message, utf16_len

MAX_TEXT = 4096
"""Telegram's limit for a message's text, counted after entity parsing."""

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)")
_HEADING = re.compile(r"^ {0,3}#{1,6}\s+(.+?)(?:\s+#+)?\s*$")
_QUOTE = re.compile(r"^ {0,3}>\s?(.*)$")
_BULLET = re.compile(r"^(\s*)[-*+]\s+(.*)$")
_LANGUAGE = re.compile(r"^[\w+#.-]{1,32}$")
_SAFE_URL = re.compile(r"^(https?://|tg://|mailto:)", re.IGNORECASE)
_INLINE = re.compile(
    r"(?P<ticks>`+)(?P<code>.+?)(?P=ticks)"
    r"|\[(?P<label>[^\]\n]+)\]\((?P<url>[^()\s]+)\)"
    r"|\*\*(?P<bold>\S(?:.*?\S)?)\*\*"
    r"|(?<!\w)__(?P<bold2>\S(?:.*?\S)?)__(?!\w)"
    r"|~~(?P<strike>\S(?:.*?\S)?)~~"
    r"|\*(?P<italic>[^\s*](?:[^*]*?[^\s*])?)\*"
    r"|(?<!\w)_(?P<italic2>[^\s_](?:[^_]*?[^\s_])?)_(?!\w)"
)


@dataclass(frozen=True)
class Part:
    """One message of an answer: its HTML, and the plain text to send if Telegram refuses it."""

    html: str
    plain: str

    @classmethod
    def of_text(cls, text: str) -> Part:
        """A part that is plain text in both forms."""
        return cls(escape(text, quote=False), text)


def render_parts(text: str, limit: int = MAX_TEXT, note: str = CUT_NOTE) -> list[Part]:
    """An answer as ordered parts within Telegram's limit, each formatted as HTML.

    At most MAX_ANSWER_PARTS; a longer answer is cut with a note saying so.
    """
    split = lambda t: split_message(t, limit, utf16_len)  # noqa: E731
    chunks = capped(split, text, limit, utf16_len, note=note) or [text.strip()[:limit] or "…"]
    return [Part(to_html(chunk), chunk) for chunk in chunks]


def to_html(text: str) -> str:
    """Telegram HTML for one part of Markdown."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if fence is not None:
            marker, language = fence.group(1), fence.group(2)
            end = i + 1
            while end < len(lines) and not _closes(lines[end], marker):
                end += 1
            out.append(_code_block("\n".join(lines[i + 1 : end]), language))
            i = end + 1
            continue
        quoted: list[str] = []
        while i < len(lines) and (match := _QUOTE.match(lines[i])) is not None:
            quoted.append(inline(match.group(1)))
            i += 1
        if quoted:
            out.append("<blockquote>" + "\n".join(quoted) + "</blockquote>")
            continue
        out.append(_line(line))
        i += 1
    return "\n".join(out)


def _line(line: str) -> str:
    heading = _HEADING.match(line)
    if heading is not None:
        return f"<b>{inline(heading.group(1))}</b>"
    bullet = _BULLET.match(line)
    if bullet is not None and not re.fullmatch(r"\s*([-*_])(\s*\1){2,}\s*", line):
        return f"{bullet.group(1)}• {inline(bullet.group(2))}"
    return inline(line)


def _closes(line: str, marker: str) -> bool:
    stripped = line.strip()
    return len(stripped) >= len(marker) and set(stripped) == {marker[0]}


def _code_block(code: str, language: str) -> str:
    body = escape(code, quote=False)
    if _LANGUAGE.match(language):
        return f'<pre><code class="language-{escape(language)}">{body}</code></pre>'
    return f"<pre>{body}</pre>"


def inline(text: str) -> str:
    """Escaped text with code, links, bold, italic and strikethrough as Telegram tags."""
    out: list[str] = []
    pos = 0
    for match in _INLINE.finditer(text):
        out.append(escape(text[pos : match.start()], quote=False))
        out.append(_span(match))
        pos = match.end()
    out.append(escape(text[pos:], quote=False))
    return "".join(out)


def _span(match: re.Match[str]) -> str:
    groups = match.groupdict()
    if groups["code"] is not None:
        return f"<code>{escape(groups['code'], quote=False)}</code>"
    if groups["label"] is not None:
        url = groups["url"]
        if not _SAFE_URL.match(url):
            return escape(match.group(0), quote=False)
        return f'<a href="{escape(url)}">{inline(groups["label"])}</a>'
    for name, tag in (("bold", "b"), ("bold2", "b"), ("strike", "s"), ("italic", "i")):
        if groups[name] is not None:
            return f"<{tag}>{inline(groups[name])}</{tag}>"
    return f"<i>{inline(groups['italic2'])}</i>"
