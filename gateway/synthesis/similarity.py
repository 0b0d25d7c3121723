"""Recognising a claim again: content hashes, text similarity (difflib), what a claim says.

The measures themselves (`normalise`, `similar`) are in gateway/core/similarity.py.

Two proposals make the same claim when their normalised bodies are equal, or
when target, name and description closely match. An update usually keeps its
skill's description, so for two updates the change itself (the lines added or
removed) must match as well; otherwise one rejected update would block every
later, different improvement of that skill.
"""

from __future__ import annotations

import hashlib
from difflib import SequenceMatcher

from gateway.core.similarity import normalise
from gateway.review.proposals import Claim

MAX_CHANGE_CHARS = 4000


def body_hash(content: str) -> str:
    """SHA-256 of a body stripped, whitespace-collapsed and lower-cased."""
    return hashlib.sha256(" ".join(content.split()).lower().encode("utf-8")).hexdigest()


def change_text(old_body: str | None, new_body: str) -> str:
    """The normalised lines an update adds (+) or removes (-); a create's whole body."""
    new = [normalise(line) for line in new_body.splitlines() if normalise(line)]
    if old_body is None:
        return "\n".join(new)[:MAX_CHANGE_CHARS]
    old = [normalise(line) for line in old_body.splitlines() if normalise(line)]
    out: list[str] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag in ("delete", "replace"):
            out.extend(f"- {line}" for line in old[i1:i2])
        if tag in ("insert", "replace"):
            out.extend(f"+ {line}" for line in new[j1:j2])
    return "\n".join(out)[:MAX_CHANGE_CHARS]


def claim_key(claim: Claim) -> str:
    """`target|name|description`, each part normalised."""
    return "|".join(normalise(part) for part in (claim.target or "", claim.name, claim.description))


def claim_text(claim: Claim) -> str:
    """What a claim says: its description and the lines it adds (a name is only a label)."""
    added = [
        line[2:] if line.startswith("+ ") else line
        for line in claim.change_text.splitlines()
        if not line.startswith("- ")
    ]
    return "\n".join([claim.description, *added])
