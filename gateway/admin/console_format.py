"""Template filters: times, rates, durations, excerpts and Markdown as the console shows them."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict
from markupsafe import Markup

from gateway.core.models import AttachmentRecord
from gateway.core.prompt import attachment_label
from gateway.media.remote import megabytes

_SPACE = re.compile(r"\s+")
# Raw HTML stays text, images are not fetched (the page loads nothing from elsewhere), and
# markdown-it's own check already refuses javascript: and similar link targets.
_MARKDOWN = (
    MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    .enable(["table", "strikethrough"])
    .disable("image")
)


def _link_open(
    self: RendererHTML, tokens: list[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    tokens[idx].attrSet("rel", "noopener nofollow")
    return self.renderToken(tokens, idx, options, env)


_MARKDOWN.add_render_rule("link_open", _link_open)


def markdown(text: str | None) -> Markup:
    """Markdown as safe HTML: no raw HTML, links marked rel="noopener nofollow"."""
    return Markup(_MARKDOWN.render(text or ""))


def when(ts: float | None) -> Markup:
    """A UTC timestamp as a <time> element; the script shows it in the viewer's zone."""
    if ts is None:
        return Markup("—")
    moment = datetime.fromtimestamp(ts, UTC)
    iso = moment.isoformat(timespec="seconds").replace("+00:00", "Z")
    text = moment.strftime("%Y-%m-%d %H:%M UTC")
    return Markup('<time datetime="{}" title="{}">{}</time>').format(iso, text, text)


def pct(rate: float | None) -> str:
    """A rate as a whole percentage, or a dash when there is nothing to rate."""
    return "—" if rate is None else f"{round(rate * 100)}%"


def duration(start: float | None, end: float | None) -> str:
    """How long something took, in the largest sensible unit."""
    if start is None or end is None:
        return "—"
    seconds = max(0.0, end - start)
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def excerpt(text: str | None, limit: int = 160) -> str:
    """One line of at most `limit` characters."""
    flat = _SPACE.sub(" ", text or "").strip()
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def head_and_rest(text: str | None, lines: int = 6, chars: int = 480) -> tuple[str, str]:
    """The first lines of `text` that fit, ending on a line boundary, and the rest."""
    rows = (text or "").strip().splitlines()
    taken, size = 0, 0
    for row in rows[:lines]:
        if taken and size + len(row) > chars:
            break
        taken, size = taken + 1, size + len(row) + 1
    if taken == 1 and len(rows[0]) > chars:  # one long line: cut it between words
        cut = rows[0].rfind(" ", 0, chars)
        cut = cut if cut > chars // 2 else chars
        return rows[0][:cut].rstrip() + " …", "\n".join([rows[0][cut:].lstrip(), *rows[1:]])
    return "\n".join(rows[:taken]), "\n".join(rows[taken:]).strip()


ICONS = {"voice": "🎤", "image": "🖼️", "document": "📄"}
SENT_AS = {
    "transcript": "the model got the transcript",
    "image": "the model saw the image",
    "text": "the model got its text",
    "caption": "the model got the caption only",
}


def attachment(a: AttachmentRecord) -> str:
    """One line about what came with a message: icon, label, type, size, what the model got."""
    facts = [f"{ICONS.get(a.kind, '📎')} {attachment_label(a)}", a.mime, megabytes(a.size)]
    if a.width and a.height:
        facts.append(f"{a.width}x{a.height}")
    if a.text_chars and a.kind == "document":
        facts.append(f"{a.text_chars:,} characters")
    facts.append(SENT_AS.get(a.sent_as, a.sent_as))
    if a.note:
        facts.append(a.note)
    return " · ".join(facts)


FILTERS: dict[str, Callable[..., Any]] = {
    "attachment": attachment,
    "when": when,
    "pct": pct,
    "duration": duration,
    "excerpt": excerpt,
    "head_and_rest": head_and_rest,
    "markdown": markdown,
}
