"""A tokenizer-free token estimate, good enough for budgets.

Real tokenizers need vocabulary files (often downloaded at run time) and differ
per model. Four ASCII characters per token is the usual English rule; other
scripts (CJK, Thai, emoji) run close to one token per character, so they are
counted one each to stay on the safe side.
"""

from __future__ import annotations


def estimate_tokens(text: str) -> int:
    """Estimated tokens of `text`, never below 1 for non-empty text."""
    if not text:
        return 0
    ascii_chars = len(text.encode("ascii", "ignore"))
    other = len(text) - ascii_chars
    return max(1, (ascii_chars + 3) // 4 + other)
