"""What a review operation raises once it is durable, and what app.py makes follow from it.

The reviewer raises one `ReviewEvent` per operation, where the operation finishes:
staging, a decision, a rollback, a skill switched by hand. The composition root wires
its effects (`Effects`): the skill index rebuilt from what the review wrote, the log
line, every admin's copy of the card.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from gateway.core.records import SkillRecord
from gateway.review.proposals import Proposal


@dataclass(frozen=True)
class ReviewEvent:
    """What one review operation did, raised once it is durable.

    A proposal was staged (`staged`) or its status changed (`decided`), or a skill was
    switched off or on by hand (`switched`, no proposal). `skill` is the registry row the
    operation left when it changed the live library, and `text` the SKILL.md it wrote.
    """

    kind: Literal["staged", "decided", "switched"]
    proposal: Proposal | None = None
    skill: SkillRecord | None = None
    text: str | None = None


Effects = Callable[[ReviewEvent], Awaitable[None]]
"""What follows a review operation (the skill index, the cards, the log), wired by app.py."""


async def no_effects(event: ReviewEvent) -> None:
    """Nothing follows (a reviewer used on its own)."""


@dataclass(frozen=True)
class Change:
    """What a promotion, retirement or restore left: the registry row and the text written."""

    skill: SkillRecord | None
    text: str | None = None
