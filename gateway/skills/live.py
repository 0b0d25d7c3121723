"""A live skill as an update would change it: its text, parsed, and where it came from."""

from __future__ import annotations

from dataclasses import dataclass

from gateway.errors import SkillError
from gateway.skills.library import Skill, SkillLibrary, parse_skill


@dataclass(frozen=True)
class LiveSkill:
    """A skill on disk as an update would change it."""

    text: str
    skill: Skill
    source: str


def load_live(library: SkillLibrary, slug: str, registry_source: str | None) -> LiveSkill | None:
    """The live skill `slug` with its source (registry, then frontmatter, else custom)."""
    try:
        text = library.read_text(slug)
    except SkillError:
        return None
    return live_of(text, slug, registry_source)


def live_of(text: str, slug: str, registry_source: str | None) -> LiveSkill | None:
    """The live skill whose SKILL.md text was just read; None when it does not parse."""
    try:
        skill = parse_skill(text, expect_name=slug)
    except SkillError:
        return None
    return LiveSkill(text=text, skill=skill, source=registry_source or skill.source or "custom")
