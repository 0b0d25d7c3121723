"""The simulated people: hidden preferences, how they judge an answer, what they say after 👎.

Each user holds some of five preferences, drawn once from a fixed seed; two of them
conflict (short answers, detailed answers), so no one set of skills pleases everyone.
An answer pleases a user when it meets every preference they hold; the judgement
reads only the text the user was shown, so it applies to a real model's answers too.
Ratings carry noise: with probability `noise` a user presses the other button. What
they say after 👎 comes from a phrase bank: the held-out one (`phrases_held_out`),
which the model's reader of comments never saw, or the one that reader was written
beside (`phrases`). Both banks hold as many phrases per case, so the same seed draws
the same users, questions and ratings with either until the answers differ.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from eval.corpus import CORPUS, Question, words
from eval.phrases import TUNED, PhraseBank
from eval.phrases_held_out import HELD_OUT

PREFERENCES: dict[str, str] = {
    "bullets": "wants the facts as bullet points",
    "metric": "wants metric units",
    "citation": "wants a line naming the source",
    "brief": "dislikes answers over 60 words",
    "detail": "wants 100 words or more, with background",
}
SHARE: dict[str, float] = {
    "bullets": 0.55,
    "metric": 0.5,
    "citation": 0.4,
    "brief": 0.4,
    "detail": 0.25,
}
"""How common each preference is among users; `brief` and `detail` exclude each other."""
CONFLICTS = (("brief", "detail"),)
BANKS: dict[str, PhraseBank] = {b.name: b for b in (HELD_OUT, TUNED)}
"""The phrase banks by name, the headline's (held-out) first."""
BRIEF_WORDS = 60
DETAIL_WORDS = 100

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


def meets(preference: str, text: str, question: Question) -> bool:
    """Whether an answer's visible text meets one preference."""
    if preference == "bullets":
        return sum(1 for line in text.splitlines() if _LIST_LINE.match(line)) >= 2
    if preference == "metric":
        if not applies(preference, question):
            return True
        return bool(_METRIC.search(text)) and not _IMPERIAL.search(text)
    if preference == "citation":
        return bool(_SOURCE_LINE.search(text))
    if preference == "brief":
        return words(text) <= BRIEF_WORDS
    if preference == "detail":
        return words(text) >= DETAIL_WORDS
    raise ValueError(f"unknown preference {preference!r}")


def applies(preference: str, question: Question) -> bool:
    """Whether an answer to this question can miss a preference (units need a measurement)."""
    return preference != "metric" or question.measurement


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
        prefs = {p for p in PREFERENCES if rng.random() < SHARE[p]}
        for a, b in CONFLICTS:
            if a in prefs and b in prefs:
                prefs.discard(rng.choice((a, b)))  # nobody wants both
        users.append(User(first_id + n, frozenset(prefs), f"{seed}:user:{first_id + n}"))
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


def rate(
    user: User,
    text: str,
    question: Question,
    rng: random.Random,
    habits: Habits,
    bank: PhraseBank,
) -> Rating:
    """The user's reaction to an answer (drawn from their own stream), in the bank's words."""
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
        return Rating(-1, rng.choice(bank.password))
    if not missed:
        return Rating(-1, rng.choice(bank.vague))
    return Rating(-1, rng.choice(bank.complaints[rng.choice(missed)]))


def questions_for(rng: random.Random, count: int) -> list[Question]:
    """`count` different questions from the corpus (all of them, shuffled, when more)."""
    return rng.sample(CORPUS, min(count, len(CORPUS)))
