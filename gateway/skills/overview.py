"""The skills list admins read in chat and in the terminal: source, status, ratings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from gateway.core.records import SkillRecord


class Rated(Protocol):
    """👍 and 👎 given to answers that loaded a skill."""

    @property
    def up(self) -> int: ...

    @property
    def down(self) -> int: ...


def rating_text(rated: Rated | None) -> str:
    """E.g. "👍 80% of 5 ratings", or "no ratings yet"."""
    total = 0 if rated is None else rated.up + rated.down
    if rated is None or not total:
        return "no ratings yet"
    share = round(100 * rated.up / total)
    return f"👍 {share}% of {total} rating{'' if total == 1 else 's'}"


def skill_line(record: SkillRecord, rated: Rated | None, pending: int | None = None) -> str:
    """One skill: name, source, status and rating."""
    state = "enabled" if record.enabled else "disabled"
    line = (
        f"• {record.slug} — {record.source}, {state}, {record.review_status}; {rating_text(rated)}"
    )
    if pending is not None:
        line += f"; proposal #{pending} waiting"
    return line


def skills_overview(
    records: Sequence[SkillRecord],
    ratings: Mapping[str, Rated],
    pending: Mapping[str, int] | None = None,
) -> str:
    """Every registered skill on its own line, with a heading."""
    if not records:
        return "No skills are registered yet."
    waiting = pending or {}
    lines = [f"Skills ({len(records)}):"]
    lines.extend(skill_line(r, ratings.get(r.slug), waiting.get(r.slug)) for r in records)
    return "\n".join(lines)
