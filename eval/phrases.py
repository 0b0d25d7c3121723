"""What simulated users say after 👎: the phrase bank the model's reader was built beside.

Only the users (`world`) read this module; the scripted model, the answer style and
the reviewer never import it. The scripted model's reader of comments was written
beside this bank, though, so most of its patterns match these phrases: figures
measured with it flatter the reader, and the report leads with the held-out bank
(`phrases_held_out`) instead. Some phrasings name what is wrong plainly, some only
hint at it, and a model that reads comments by their words will miss those, as real
models sometimes do.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PhraseBank:
    """What users say after 👎: per missed preference, for no reason, when asked for a password."""

    name: str
    what: str
    complaints: dict[str, tuple[str, ...]]
    """Per preference: how a user who misses it may say so (one is picked at random)."""
    vague: tuple[str, ...]
    """What a user says after a 👎 that nothing in particular caused (their noise)."""
    password: tuple[str, ...]
    """What a user says when asked for a password."""


COMPLAINTS: dict[str, tuple[str, ...]] = {
    "bullets": (
        "Please use bullet points, a wall of text is hard to read",
        "bullet points please",
        "hard to scan, can you break it into a list?",
        "could you list the facts one per line",
        "I'd prefer bullet points over a paragraph",
        "too dense, split it up",
    ),
    "metric": (
        "Use metric units please, I don't think in miles",
        "metric please, not feet and pounds",
        "please give kilometres, kilograms and °C",
        "I live in Europe, what is that in km?",
        "can you use the metric system",
        "no idea what a mile is",
    ),
    "citation": (
        "Where is this from? Add a source",
        "please cite a source",
        "no source given, I can't check it",
        "how do you know? a reference would help",
        "please say which source this comes from",
        "can I trust this?",
    ),
    "brief": (
        "Too long",
        "way too long for a chat, keep it short",
        "shorter please",
        "I only needed the key fact, not an essay",
        "keep answers brief please",
        "tl;dr",
    ),
    "detail": (
        "too short, I wanted more detail",
        "can you explain more? this is thin",
        "more depth please, give me the background",
        "I wanted a thorough explanation",
        "that's barely an answer, please elaborate",
        "more detail and background please",
    ),
}

VAGUE = ("meh", "not great", "hmm, not what I wanted", "no", "could be better")
PASSWORD = ("Why would you need my password? No.", "I'm not giving you my login!")

TUNED = PhraseBank(
    name="tuned",
    what="the bank the model's reader of comments was written beside",
    complaints=COMPLAINTS,
    vague=VAGUE,
    password=PASSWORD,
)
