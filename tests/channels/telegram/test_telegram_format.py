"""Splitting answers at paragraph and line boundaries, and Markdown as Telegram HTML."""

from __future__ import annotations

import random

import pytest

from gateway.channels.telegram.format import render_parts, to_html
from gateway.channels.text import split_message, utf16_len
from tests.fakes.telegram_api import html_to_plain


def test_paragraphs_stay_whole_and_in_order() -> None:
    paragraphs = [f"{i} " + "x" * 30 for i in range(6)]
    parts = split_message("\n\n".join(paragraphs), 70)
    assert parts == ["\n\n".join(paragraphs[i : i + 2]) for i in range(0, 6, 2)]


def test_a_long_paragraph_is_cut_at_lines_then_words_then_characters() -> None:
    lines = "first line here\nsecond line here"
    assert split_message(lines, 20) == ["first line here", "second line here"]
    assert split_message("alpha beta gamma delta", 16) == ["alpha beta gamma", "delta"]
    assert split_message("a" * 40, 16) == ["a" * 16, "a" * 16, "a" * 8]


def test_limits_can_be_counted_in_utf16_units() -> None:
    parts = split_message("😀" * 20, 16, utf16_len)
    assert [utf16_len(p) for p in parts] == [16, 16, 8]
    assert "".join(parts) == "😀" * 20


def test_a_code_block_that_fits_is_never_split() -> None:
    code = "```python\n" + "\n".join(f"x = {i}" for i in range(5)) + "\n```"
    text = "intro " * 10 + "\n\n" + code + "\n\nafter"
    parts = split_message(text, len(code) + 10)
    assert any(code in p for p in parts)
    assert all(p.count("```") in (0, 2) for p in parts)


def test_a_code_block_too_long_is_closed_and_reopened_with_its_fence() -> None:
    body = [f"print({i})" for i in range(30)]
    text = "Here it is:\n```python\n" + "\n".join(body) + "\n```\nDone."
    parts = split_message(text, 80)
    assert all(len(p) <= 80 for p in parts)
    code_parts = [p for p in parts if "print(" in p]
    assert len(code_parts) > 2
    for part in code_parts:
        block = part[part.index("```python\n") :]
        assert block.count("```") == 2 and block.rstrip("\nDone.").endswith("```")
    seen = [line for p in parts for line in p.split("\n") if line.startswith("print(")]
    assert seen == body


def test_whitespace_only_text_has_no_parts() -> None:
    assert split_message(" \n\n \n", 100) == []
    with pytest.raises(ValueError):
        split_message("x", 3)


@pytest.mark.parametrize(
    ("markdown", "html"),
    [
        ("**bold** and *it*", "<b>bold</b> and <i>it</i>"),
        ("a < b & c > d", "a &lt; b &amp; c &gt; d"),
        ("`<tag>` and ~~gone~~", "<code>&lt;tag&gt;</code> and <s>gone</s>"),
        ("## Heading", "<b>Heading</b>"),
        ("- one\n- two", "• one\n• two"),
        ("> said\n> more", "<blockquote>said\nmore</blockquote>"),
        ("[docs](https://x.org/?a=1&b=2)", '<a href="https://x.org/?a=1&amp;b=2">docs</a>'),
        ("[bad](javascript:alert(1))", "[bad](javascript:alert(1))"),
        ("snake_case_name stays", "snake_case_name stays"),
        ("**unpaired bold", "**unpaired bold"),
        ("```js\nif (a<b) {}\n```", '<pre><code class="language-js">if (a&lt;b) {}</code></pre>'),
        ("```\nplain\n```", "<pre>plain</pre>"),
    ],
)
def test_markdown_becomes_escaped_telegram_html(markdown: str, html: str) -> None:
    assert to_html(markdown) == html


def test_any_text_renders_to_html_telegram_accepts_within_the_limit() -> None:
    rng = random.Random(7)
    alphabet = ["*", "**", "_", "__", "`", "```", "~~", "[", "](", ")", "<", ">", "&", "#", ">"]
    alphabet += ["\n", "\n\n", " ", "word", "😀", "https://x.org", "- ", "```py\n", "\\"]
    for _ in range(200):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 400)))
        for part in render_parts(text, limit=300):
            visible = html_to_plain(part.html)  # raises where Telegram would refuse the HTML
            assert utf16_len(visible) <= 300
            assert utf16_len(part.plain) <= 300
