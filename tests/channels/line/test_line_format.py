"""Plain text for LINE and splitting by UTF-16 length."""

from __future__ import annotations

import pytest

from gateway.channels.line.format import MAX_TEXT_UTF16, line_parts, plain_text
from gateway.channels.text import split_text, utf16_len


def test_parts_respect_the_limit_and_prefer_paragraphs_then_lines_then_words() -> None:
    text = "alpha beta\n\ngamma delta\nepsilon zeta"
    assert split_text(text, 100) == [text]
    assert split_text(text, 16) == ["alpha beta", "gamma delta", "epsilon zeta"]
    assert split_text("one two three four", 9) == ["one two", "three", "four"]
    assert split_text("x" * 25, 10) == ["x" * 10, "x" * 10, "x" * 5]
    assert split_text("  \n ", 10) == []
    assert split_text("a   b", 1) == ["a", "b"]
    assert split_text("ab  \n  cd", 2) == ["ab", "cd"]


def test_utf16_length_counts_an_emoji_as_two_and_never_splits_a_cluster() -> None:
    family = "👨\u200d👩\u200d👧"  # one picture, five code points, eight UTF-16 units
    assert utf16_len("a😀") == 3 and utf16_len(family) == 8
    parts = split_text("😀" * 7, 4, utf16_len)
    assert parts == ["😀😀", "😀😀", "😀😀", "😀"]
    parts = split_text("ab" + family * 3, 9, utf16_len)
    assert all(utf16_len(p) <= 9 for p in parts)
    assert "".join(parts) == "ab" + family * 3
    assert all(not p.startswith("\u200d") and not p.endswith("\u200d") for p in parts)


def test_line_parts_fit_the_limit_for_any_answer() -> None:
    answer = ("🙂 " * 3000 + "\n\n") * 2
    parts = line_parts(answer)
    assert all(utf16_len(p) <= MAX_TEXT_UTF16 for p in parts)
    assert "".join(parts).replace(" ", "").replace("\n", "") == "🙂" * 6000


@pytest.mark.parametrize(
    ("markdown", "plain"),
    [
        ("**bold** _it_ `code` ~~gone~~", "bold it code gone"),
        ("[docs](https://x.org/d) and <https://x.org>", "docs (https://x.org/d) and https://x.org"),
        ("# Title\nText", "Title\n\nText"),
        ("- a\n  - b\n- c", "• a\n  • b\n• c"),
        ("3. three\n4. four", "3. three\n4. four"),
        ("> quoted\n> twice", "│ quoted\n│ twice"),
        ("| a | b |\n|---|---|\n| 1 | 2 |", "a | b\n1 | 2"),
        ("```python\nif x:\n    y()\n```", "if x:\n    y()"),
        ("a\n\n---\n\nb", "a\n\n──────────\n\nb"),
        (
            "5 * 3 = 15, snake_case, <b>html</b> &amp; \\*",
            "5 * 3 = 15, snake_case, <b>html</b> & *",
        ),
        ("line one\nline two", "line one\nline two"),
        ("![a cat](https://x.org/cat.png)", "a cat (https://x.org/cat.png)"),
    ],
)
def test_markdown_becomes_readable_plain_text(markdown: str, plain: str) -> None:
    assert plain_text(markdown) == plain
