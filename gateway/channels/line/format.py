"""Answers for LINE: Markdown reduced to readable plain text, split to LINE's limits."""

from __future__ import annotations

import re
from collections.abc import Callable

from markdown_it import MarkdownIt
from markdown_it.tree import SyntaxTreeNode

from gateway.channels.api import CUT_NOTE, capped, split_text, utf16_len

MAX_TEXT_UTF16 = 5000
"""A LINE text message holds at most 5000 UTF-16 code units (an emoji counts 2)."""

RULE = "──────────"
BULLET = "• "
QUOTE = "│ "

# HTML stays literal text: LINE shows it as typed, and nothing here renders it.
_MD = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])


def line_parts(markdown: str, note: str = CUT_NOTE) -> list[str]:
    """The texts of the LINE messages that carry one answer, in order.

    At most MAX_ANSWER_PARTS (one reply call, no push); a longer answer is cut with a note.
    """
    return capped(
        lambda t: split_text(plain_text(t), MAX_TEXT_UTF16, utf16_len),
        markdown,
        MAX_TEXT_UTF16,
        utf16_len,
        note=note,
    )


def plain_text(markdown: str) -> str:
    """Markdown as LINE shows it best: no markers, links spelled out, lists with bullets."""
    tree = SyntaxTreeNode(_MD.parse(markdown))
    text = _blocks(tree.children)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def _blocks(nodes: list[SyntaxTreeNode], sep: str = "\n\n") -> str:
    return sep.join(out for node in nodes if (out := _block(node)))


def _block(node: SyntaxTreeNode) -> str:
    kind = node.type
    if kind in ("paragraph", "heading"):
        return _inline(node)
    if kind in ("fence", "code_block"):
        return node.content.rstrip("\n")
    if kind == "bullet_list":
        return _list(node, lambda _n: BULLET)
    if kind == "ordered_list":
        start = int(node.attrs.get("start", 1))
        return _list(node, lambda n: f"{start + n}. ")
    if kind == "blockquote":
        return "\n".join(QUOTE + line for line in _blocks(node.children).splitlines())
    if kind == "hr":
        return RULE
    if kind == "table":
        return _table(node)
    if kind == "html_block":
        return node.content.rstrip("\n")
    return _blocks(node.children)


def _list(node: SyntaxTreeNode, marker: Callable[[int], str]) -> str:
    items = []
    for n, item in enumerate(node.children):
        head = marker(n)
        body = _blocks(item.children, "\n")
        pad = " " * len(head)
        lines = body.splitlines() or [""]
        items.append(head + lines[0] + "".join(f"\n{pad}{line}" for line in lines[1:]))
    return "\n".join(items)


def _table(node: SyntaxTreeNode) -> str:
    rows = []
    for section in node.children:
        for row in section.children:
            rows.append(" | ".join(_inline(cell) for cell in row.children))
    return "\n".join(rows)


def _inline(node: SyntaxTreeNode) -> str:
    return "".join(_span(child) for child in node.children)


def _span(node: SyntaxTreeNode) -> str:
    kind = node.type
    if kind in ("text", "code_inline", "html_inline"):
        return node.content
    if kind in ("softbreak", "hardbreak"):
        return "\n"
    if kind == "link":
        label = _inline(node)
        href = str(node.attrs.get("href", ""))
        bare = href.removeprefix("mailto:")
        return label if not href or bare == label else f"{label} ({href})"
    if kind == "image":
        alt = _inline(node)
        src = str(node.attrs.get("src", ""))
        return f"{alt} ({src})" if alt else src
    return _inline(node)
