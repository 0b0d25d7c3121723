"""The file side of review: staged `SKILL.md.proposed` files, promotion by os.replace, removal.

A staged file sits beside the live `SKILL.md` (or alone in a new folder for a
create), so the live skill stays in use, untouched, until an approval renames
the staged file over it. The frontmatter is written here, never by the model.
"""

from __future__ import annotations

import contextlib
import os
from datetime import UTC, datetime
from typing import Any

from gateway.errors import SkillError
from gateway.review.proposals import PROPOSED_FILE, Proposal
from gateway.skills.library import SKILL_FILE, Skill, SkillLibrary, render_skill

# Our provenance keys; a live skill's other metadata is kept as it is.
PROVENANCE_KEYS = ("proposal", "based_on", "model", "generated_at", "review", "origin")
APPROVAL_KEYS = ("approved_by", "approved_at")


def iso(ts: float | None) -> str | None:
    """Epoch seconds as an ISO 8601 UTC string."""
    return None if ts is None else datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")


def render_proposal(p: Proposal, live: Skill | None, source: str) -> str:
    """SKILL.md text for a proposal: its body, our frontmatter, the live skill's other metadata."""
    meta: dict[str, Any] = {
        k: v
        for k, v in (live.metadata if live else {}).items()
        if k not in (*PROVENANCE_KEYS, *APPROVAL_KEYS)
    }
    meta["source"] = source
    meta.update(
        proposal=p.id,
        based_on=list(p.based_on),
        model=p.model or "unknown",
        generated_at=iso(p.generated_at),
        review=p.status,
    )
    if p.origin is not None:  # a skill from elsewhere: no model wrote it, it came from there
        del meta["model"]
        meta["origin"] = p.origin
    if p.status in ("approved", "applied"):
        meta.update(approved_by=p.decided_by, approved_at=iso(p.decided_at))
    return render_skill(
        Skill(
            name=p.slug,
            description=p.description,
            body=p.content,
            metadata=meta,
            allowed_tools=list(p.allowed_tools),
        )
    )


class Staging:
    """Staged and live files of the skills folder."""

    def __init__(self, library: SkillLibrary) -> None:
        self.library = library

    def live_text(self, slug: str) -> str | None:
        try:
            return self.library.read_text(slug)
        except SkillError:
            return None

    def staged_text(self, slug: str) -> str | None:
        try:
            return self.library.read_text(slug, PROPOSED_FILE)
        except SkillError:
            return None

    def stage(self, slug: str, text: str) -> None:
        """Write (or rewrite) the staged file atomically."""
        self.library.write_text(slug, text, PROPOSED_FILE)

    def promote(self, slug: str, text: str) -> None:
        """Write the final staged text, then rename it over the live file in one step."""
        staged = self.library.write_text(slug, text, PROPOSED_FILE)
        live = self.library.path_for(slug, SKILL_FILE)
        os.replace(staged, live)
        _sync_dir(live.parent)

    def discard(self, slug: str) -> None:
        """Remove a staged file, and the folder of a create when nothing else is in it."""
        staged = self.library.path_for(slug, PROPOSED_FILE)
        staged.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            staged.parent.rmdir()  # fails, as it should, unless the folder is empty

    def staged_slugs(self) -> list[str]:
        """Folders that hold a staged file."""
        return [f.slug for f in self.library.scan(PROPOSED_FILE)]


def _sync_dir(path: os.PathLike[str]) -> None:
    """Make a rename durable: fsync the folder holding it (where the platform allows)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
