"""The skills list admins read in chat and in the terminal: source, status, measured effect."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gateway.core.records import SkillRecord
from gateway.i18n import ENGLISH, N_, Texts
from gateway.skills.effect import SkillEffect, describe

ENABLED, DISABLED = N_("enabled"), N_("disabled")
NOT_MEASURED = N_("not measured yet")
LINE = N_("• {slug} — {source}, {state}, {status}; {figures}")
WAITING = N_("; proposal #{id} waiting")
NO_SKILLS = N_("No skills are registered yet.")
SOURCES = {
    # TRANSLATORS: where a skill came from: shipped with the gateway, the operator's own,
    # written by the synthesizer ("auto"), or brought from elsewhere and approved ("imported").
    "bundled": N_("bundled"),
    "custom": N_("custom"),
    "auto": N_("auto"),
    "imported": N_("imported"),
}
"""Where a skill came from, as admins read it (another value is shown as it is)."""
STATUSES = {
    "live": N_("live"),
    "approved": N_("approved"),
    "applied": N_("applied"),
    "rolled_back": N_("rolled back"),
}
"""A skill's review status, as admins read it."""
HEADING = N_("Skills ({n}):")


def skill_line(
    record: SkillRecord,
    effect: SkillEffect | None,
    pending: int | None = None,
    texts: Texts = ENGLISH,
) -> str:
    """One skill: name, source, status, and its figures (uses, 👍/👎, rate, verdict)."""
    state = texts(ENABLED if record.enabled else DISABLED)
    figures = describe(effect, texts) if effect is not None else texts(NOT_MEASURED)
    line = texts(
        LINE,
        slug=record.slug,
        source=texts(SOURCES.get(record.source, record.source)),
        state=state,
        status=texts(STATUSES.get(record.review_status, record.review_status)),
        figures=figures,
    )
    if pending is not None:
        line += texts(WAITING, id=pending)
    return line


def skills_overview(
    records: Sequence[SkillRecord],
    effects: Mapping[str, SkillEffect],
    pending: Mapping[str, int] | None = None,
    texts: Texts = ENGLISH,
) -> str:
    """Every registered skill on its own line, with a heading."""
    if not records:
        return texts(NO_SKILLS)
    waiting = pending or {}
    lines = [texts(HEADING, n=len(records))]
    lines.extend(skill_line(r, effects.get(r.slug), waiting.get(r.slug), texts) for r in records)
    return "\n".join(lines)
