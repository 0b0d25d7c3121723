"""The bounded skill index: which skills the prompt names, within a token budget.

Scoring is plain term overlap weighted by rarity (idf) over name and
description, served from an inverted index so that a query touches only the
skills sharing a word with it. Whatever the library's size, the index that
reaches the prompt never exceeds its budget.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

from gateway.core.tokens import estimate_tokens

INDEX_HEADER = (
    "Skills you can load with the load_skill tool when one fits the request (name: when to use it):"
)
MAX_INDEX_DESCRIPTION = 240
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_STOP_WORDS = (
    "a an and are as at be by for from how i in is it me my of on or the to what when with you"
)
_STOP = frozenset(_STOP_WORDS.split())


def terms(text: str) -> set[str]:
    """Lower-cased words of a text, without stop words; hyphens split words."""
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


@dataclass(frozen=True)
class IndexEntry:
    """One line of the skill index."""

    name: str
    description: str
    line: str = field(compare=False)
    cost: int = field(compare=False)


def index_entry(name: str, description: str) -> IndexEntry:
    """The index line for a skill, with its description shortened for the index."""
    short = " ".join(description.split())
    if len(short) > MAX_INDEX_DESCRIPTION:
        short = short[: MAX_INDEX_DESCRIPTION - 1].rstrip() + "…"
    line = f"- {name}: {short}"
    return IndexEntry(name=name, description=short, line=line, cost=estimate_tokens(line) + 1)


class SkillIndex:
    """Enabled skills, ready for relevance-ordered selection under a budget.

    `replace` only takes the pairs; the entries and the inverted index are built on first
    use, so that start-up with a large library reaches healthy before paying for them.
    """

    def __init__(self, skills: Iterable[tuple[str, str]] = ()) -> None:
        self._entries: list[IndexEntry] = []
        self._postings: dict[str, list[int]] = defaultdict(list)
        self._idf: dict[str, float] = {}
        self._pending: list[tuple[str, str]] | None = None
        self.replace(skills)

    def replace(self, skills: Iterable[tuple[str, str]]) -> None:
        """Rebuild from (name, description) pairs (built when next used)."""
        self._pending = list(skills)

    def build(self) -> None:
        """Build what the last `replace` gave, if not built yet."""
        pending, self._pending = self._pending, None
        if pending is None:
            return
        entries = sorted((index_entry(n, d) for n, d in pending), key=lambda e: e.name)
        postings: dict[str, list[int]] = defaultdict(list)
        for i, entry in enumerate(entries):
            for term in terms(entry.name.replace("-", " ") + " " + entry.description):
                postings[term].append(i)
        total = max(1, len(entries))
        self._entries = entries
        self._postings = postings
        self._idf = {t: math.log(1 + total / len(ids)) for t, ids in postings.items()}

    def __len__(self) -> int:
        self.build()
        return len(self._entries)

    def names(self) -> list[str]:
        self.build()
        return [e.name for e in self._entries]

    def select(
        self, query: str, budget_tokens: int, exclude: Collection[str] = ()
    ) -> list[IndexEntry]:
        """Entries that fit the budget (header included), most relevant to `query` first."""
        self.build()
        room = budget_tokens - estimate_tokens(INDEX_HEADER) - 1
        if room <= 0 or not self._entries:
            return []
        scores: dict[int, float] = defaultdict(float)
        for term in terms(query):
            for i in self._postings.get(term, ()):
                scores[i] += self._idf[term]
        ranked = sorted(scores, key=lambda i: (-scores[i], i))
        chosen: list[IndexEntry] = []
        seen = set(ranked)
        for i in [*ranked, *(i for i in range(len(self._entries)) if i not in seen)]:
            entry = self._entries[i]
            if entry.name in exclude:
                continue
            if entry.cost <= room:
                chosen.append(entry)
                room -= entry.cost
            if room < 8:  # no entry line is that short; stop scanning a large library
                break
        return chosen


def render_index(entries: list[IndexEntry]) -> str:
    """The index section of the system prompt ('' when no skill is offered)."""
    if not entries:
        return ""
    return "\n".join([INDEX_HEADER, *(e.line for e in entries)])
