"""The skills list admins read in chat and in the terminal: source, status, measured effect."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gateway.core.records import SkillRecord
from gateway.skills.effect import SkillEffect, describe


def skill_line(record: SkillRecord, effect: SkillEffect | None, pending: int | None = None) -> str:
    """One skill: name, source, status, and its figures (uses, 👍/👎, rate, verdict)."""
    state = "enabled" if record.enabled else "disabled"
    figures = describe(effect) if effect is not None else "not measured yet"
    line = f"• {record.slug} — {record.source}, {state}, {record.review_status}; {figures}"
    if pending is not None:
        line += f"; proposal #{pending} waiting"
    return line


def skills_overview(
    records: Sequence[SkillRecord],
    effects: Mapping[str, SkillEffect],
    pending: Mapping[str, int] | None = None,
) -> str:
    """Every registered skill on its own line, with a heading."""
    if not records:
        return "No skills are registered yet."
    waiting = pending or {}
    lines = [f"Skills ({len(records)}):"]
    lines.extend(skill_line(r, effects.get(r.slug), waiting.get(r.slug)) for r in records)
    return "\n".join(lines)
