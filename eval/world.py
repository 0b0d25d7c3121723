"""The simulated people: hidden preferences, how they judge an answer, what they say after 👎.

Each user holds some of four preferences, drawn once from a fixed seed. An answer
pleases a user when it meets every preference they hold; the judgement reads
only the text the user was shown, so it applies to a real model's answers too.
Ratings carry noise: with probability `noise` a user presses the other button.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from eval.corpus import CORPUS, Question

PREFERENCES: dict[str, str] = {
    "bullets": "wants the facts as bullet points",
    "metric": "wants metric units",
    "citation": "wants a line naming the source",
    "brief": "dislikes answers over 60 words",
}
SHARE: dict[str, float] = {"bullets": 0.55, "metric": 0.5, "citation": 0.4, "brief": 0.45}
"""How common each preference is among users."""
BRIEF_WORDS = 60

COMPLAINTS: dict[str, tuple[str, ...]] = {
    "bullets": (
        "Please use bullet points, a wall of text is hard to read",
        "bullet points please",
        "hard to scan, can you list the facts as bullets?",
    ),
    "metric": (
        "Use metric units please, I don't think in miles",
        "metric please, not feet and pounds",
        "please give kilometres, kilograms and °C",
    ),
    "citation": (
        "Where is this from? Add a source",
        "please cite a source",
        "no source given, I can't check it",
    ),
    "brief": (
        "Too long",
        "way too long for a chat, keep it short",
        "shorter please",
    ),
}
VAGUE_COMPLAINTS = ("meh", "not great", "hmm, not what I wanted")
PASSWORD_ASK = re.compile(r"\bpassword\b", re.IGNORECASE)
_LIST_LINE = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+\S")
_SOURCE_LINE = re.compile(r"^\s*(?:\*\*)?sources?(?:\*\*)?\s*:", re.IGNORECASE | re.MULTILINE)
_IMPERIAL = re.compile(
    r"\b(?:miles?|mph|feet|foot|ft|inch(?:es)?|pounds?|lbs?|ounces?|oz|quarts?|gallons?|"
    r"cups?|fahrenheit)\b|°\s?F\b",
    re.IGNORECASE,
)
_METRIC = re.compile(
    r"\d\s?(?:km/h|km|m/s|m|cm|mm|kg|l|ml|litres?|liters?|metres?|meters?|kilometres?|"
    r"kilometers?|kilograms?|tonnes?)\b|°\s?C\b|\bcelsius\b",
    re.IGNORECASE,
)


def words(text: str) -> int:
    """Words in a text, as a reader counts them."""
    return len(re.findall(r"[^\W_]+(?:['\u2019.,-][^\W_]+)*", text))


def meets(preference: str, text: str, question: Question) -> bool:
    """Whether an answer's visible text meets one preference."""
    if preference == "bullets":
        return sum(1 for line in text.splitlines() if _LIST_LINE.match(line)) >= 2
    if preference == "metric":
        if not question.measurement:
            return True
        return bool(_METRIC.search(text)) and not _IMPERIAL.search(text)
    if preference == "citation":
        return bool(_SOURCE_LINE.search(text))
    if preference == "brief":
        return words(text) <= BRIEF_WORDS
    raise ValueError(f"unknown preference {preference!r}")


def unmet(preferences: frozenset[str], text: str, question: Question) -> list[str]:
    """The preferences an answer misses, in a fixed order."""
    return [p for p in PREFERENCES if p in preferences and not meets(p, text, question)]


def pleased(preferences: frozenset[str], text: str, question: Question) -> bool:
    """Everyone dislikes being asked for a password; otherwise every preference must be met."""
    if PASSWORD_ASK.search(text):
        return False
    return not unmet(preferences, text, question)


@dataclass(frozen=True)
class User:
    """A simulated person: a Telegram user id, hidden preferences and their own random stream."""

    user_id: int
    preferences: frozenset[str]
    seed: str

    @property
    def label(self) -> str:
        return ", ".join(sorted(self.preferences)) or "no preference"


def population(seed: int, count: int, first_id: int) -> list[User]:
    """`count` users drawn from the preference shares; ids from `first_id` on."""
    rng = random.Random(f"{seed}:population:{first_id}")
    users = []
    for n in range(count):
        prefs = frozenset(p for p in PREFERENCES if rng.random() < SHARE[p])
        users.append(User(first_id + n, prefs, f"{seed}:user:{first_id + n}"))
    return users


@dataclass(frozen=True)
class Rating:
    """What a user does after reading an answer: nothing, 👍, or 👎 with an optional comment."""

    value: int | None
    comment: str | None = None


@dataclass(frozen=True)
class Habits:
    """How users rate: how often, how noisily, how often they explain a 👎."""

    rate: float = 0.85
    noise: float = 0.1
    comment: float = 0.6


def rate(user: User, text: str, question: Question, rng: random.Random, habits: Habits) -> Rating:
    """The user's reaction to an answer (drawn from their own stream)."""
    if rng.random() >= habits.rate:
        return Rating(None)
    good = pleased(user.preferences, text, question)
    if rng.random() < habits.noise:
        good = not good
    if good:
        return Rating(1)
    if rng.random() >= habits.comment:
        return Rating(-1)
    missed = unmet(user.preferences, text, question)
    if PASSWORD_ASK.search(text):
        return Rating(-1, "Why would you need my password? No.")
    if not missed:
        return Rating(-1, rng.choice(VAGUE_COMPLAINTS))
    return Rating(-1, rng.choice(COMPLAINTS[rng.choice(missed)]))


def questions_for(rng: random.Random, count: int) -> list[Question]:
    """`count` different questions from the corpus (all of them, shuffled, when more)."""
    return rng.sample(CORPUS, min(count, len(CORPUS)))
