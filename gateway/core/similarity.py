"""Text similarity shared by the loop's stages: normalised text and difflib ratios.

Synthesis uses it to recognise a claim again; review, to see an update that shares almost
nothing with the skill it replaces.
"""

from __future__ import annotations

import unicodedata
from difflib import SequenceMatcher

_MARKS = ("Mn", "Mc")
"""Combining marks: Thai vowels and tones, Devanagari signs. Part of the word, not punctuation."""


def normalise(text: str) -> str:
    """Lower case, punctuation dropped, whitespace collapsed; letters keep their marks."""
    kept = (
        c if c.isalnum() or c == "_" or unicodedata.category(c) in _MARKS else " "
        for c in text.lower()
    )
    return " ".join("".join(kept).split())


def similar(a: str, b: str, threshold: float) -> bool:
    """SequenceMatcher ratio at least `threshold`, with difflib's cheap upper bounds first."""
    if a == b:
        return True
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    return (
        matcher.real_quick_ratio() >= threshold
        and matcher.quick_ratio() >= threshold
        and matcher.ratio() >= threshold
    )


def word_overlap(a: str, b: str) -> float:
    """The share of the shorter text's normalised words that difflib's SequenceMatcher finds,
    in order, in the other: 1.0 when one contains the other, near 0 when they share nothing.

    Unlike `SequenceMatcher.ratio`, a short text is not penalised for being short: "Keep
    answers short." against a long skill about chat answers still overlaps.
    """
    left, right = normalise(a).split(), normalise(b).split()
    if not left or not right:
        return 1.0 if left == right else 0.0
    matcher = SequenceMatcher(None, left, right, autojunk=False)
    matched = sum(block.size for block in matcher.get_matching_blocks())
    return matched / min(len(left), len(right))
