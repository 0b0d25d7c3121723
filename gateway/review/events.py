"""What a review operation raises once it is durable.

The reviewer publishes one `ReviewEvent` per operation, where the operation finishes:
staging, a decision, a rollback, a skill switched by hand. Its subscribers are listed in
`runtime.assembly`: the skill index rebuilt from what the review wrote, the log line,
every admin's copy of the card.
"""

from __future__ import annotations

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

    @property
    def about(self) -> str:
        return f"proposal #{self.proposal.id}" if self.proposal else "a skill switch"


@dataclass(frozen=True)
class Change:
    """What a promotion, retirement or restore left: the registry row and the text written."""

    skill: SkillRecord | None
    text: str | None = None
