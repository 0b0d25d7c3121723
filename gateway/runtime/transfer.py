"""Import a skill from elsewhere as a proposal, export what the admins approved.

The CLI (`skillgate skills import|export`), the admin API and the console's Skills page call
these. An import is read (`synthesis.transfer`: bounds, paths, front matter), then goes the way
of a learned draft (`Synthesizer.take`: screening, the same-claim check, the tools configured,
staging, a card to every admin); nothing goes live before an admin approves it. An address is
fetched as `web_fetch` fetches: public addresses only, every redirect and peer checked, the
body read no further than the documents' bound.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp.abc import AbstractResolver

from gateway.config import Settings
from gateway.conversation.attachments import UNPACKED_BYTES
from gateway.errors import SkillError
from gateway.review.proposals import Proposal
from gateway.review.reviewer import Reviewer, live_proposal
from gateway.synthesis.summary import RunSummary
from gateway.synthesis.synthesizer import Synthesizer
from gateway.synthesis.transfer import (
    ARCHIVE_SUFFIXES,
    Bounds,
    Bundle,
    ImportRefused,
    bundle_of,
    export_text,
    read_archive,
    read_folder,
    write_export,
    zip_export,
)
from gateway.tools.policy import CallFailed, CallRefused
from gateway.tools.web import fetch_bounded

__all__ = ["ImportRefused", "Imported", "NotApproved", "SkillTransfer"]


class NotApproved(SkillError):
    """A skill no admin approved: only approved skills are exported."""


@dataclass
class Imported:
    """What an import did: the pass-like summary (proposed, suppressed or refused, with why)
    and the files left out of the skill."""

    summary: RunSummary
    left_out: list[str] = field(default_factory=list)

    @property
    def proposal_id(self) -> int | None:
        return self.summary.proposed[0].id if self.summary.proposed else None

    @property
    def refusal(self) -> str | None:
        """Why nothing was proposed (None: a proposal waits for review)."""
        if self.summary.proposed:
            return None
        if self.summary.status == "busy":
            return self.summary.error
        dropped = [*self.summary.refused, *self.summary.suppressed]
        return dropped[0].reason if dropped else "nothing was proposed"

    def as_json(self) -> dict[str, object]:
        return {
            "proposal": self.proposal_id,
            "refused": self.refusal,
            "left_out": self.left_out,
        }


def shown_address(url: str) -> str:
    """An address as a card shows it: without credentials, query or fragment."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))


MAX_ORIGIN = 300
"""Characters of an origin as cards show it."""


def origin_of(via: str, name: str) -> str:
    """`CLI (alice): metric-recipes.zip`, clipped; line breaks and controls become spaces."""
    text = f"{via}: {name}"
    text = "".join(c if c.isprintable() else " " for c in text)
    return text if len(text) <= MAX_ORIGIN else text[: MAX_ORIGIN - 1] + "…"


def bounds_of(settings: Settings) -> Bounds:
    """The documents' bounds for what is downloaded and unpacked; the skill's for each file."""
    return Bounds(
        archive_bytes=settings.download_cap("document"),
        unpacked_bytes=UNPACKED_BYTES,
        file_bytes=settings.max_skill_bytes,
    )


class SkillTransfer:
    """Imports and exports over the reviewer and the synthesizer's intake."""

    def __init__(self, settings: Settings, review: Reviewer, synthesizer: Synthesizer) -> None:
        self.bounds = bounds_of(settings)
        self.review = review
        self.synthesizer = synthesizer
        self.resolver: AbstractResolver | None = None
        """How addresses are resolved: web_fetch's public-only resolver when None."""

    async def import_path(self, path: Path, via: str) -> Imported:
        """A folder, a SKILL.md or a .zip/.skill on this machine."""
        if not path.exists():
            raise ImportRefused(f"{path} does not exist")
        return await self._take(read_folder(path, self.bounds, origin_of(via, path.name)))

    async def import_url(self, url: str, via: str) -> Imported:
        """A SKILL.md or an archive at an http(s) address, fetched as web_fetch fetches."""
        shown = shown_address(url)
        try:
            data = await fetch_bounded(url, self.bounds.archive_bytes, self.resolver)
        except (CallRefused, CallFailed) as exc:
            raise ImportRefused(f"{shown} cannot be fetched: {exc}") from exc
        return await self.import_bytes(data, shown, via)

    async def import_bytes(self, data: bytes, name: str, via: str) -> Imported:
        """An uploaded or fetched file: an archive when it is one, else a SKILL.md."""
        origin = origin_of(via, name)
        if data[:4] == b"PK\x03\x04" or name.lower().endswith(ARCHIVE_SUFFIXES):
            bundle = read_archive(data, self.bounds, origin)
        else:
            if len(data) > self.bounds.archive_bytes:
                raise ImportRefused(
                    f"{name} is {len(data):,} bytes, over the bound of"
                    f" {self.bounds.archive_bytes:,}"
                )
            bundle = bundle_of({"SKILL.md": data}, self.bounds, origin)
        return await self._take(bundle)

    async def _take(self, bundle: Bundle) -> Imported:
        summary = await self.synthesizer.take(bundle.draft)
        return Imported(summary, bundle.left_out)

    async def approved(self, slug: str) -> tuple[str, Proposal]:
        """A live skill's export text and the approval that made it live; NotApproved when no
        admin approved its text (bundled, custom, applied automatically)."""
        library = self.review.library
        text = library.read_text(slug)  # SkillNotFound when there is none
        skill = library.read(slug)
        record = await self.review.store.get_skill_record(slug)
        pid = live_proposal(text)
        proposal = await self.review.store.get_proposal(pid) if pid is not None else None
        if proposal is None or proposal.status != "approved" or proposal.slug != slug:
            source = record.source if record else skill.source or "custom"
            raise NotApproved(f"{slug} is not a skill an admin approved (source {source})")
        source = record.source if record else "auto"
        return export_text(skill, proposal, source), proposal

    async def approved_slugs(self) -> list[str]:
        """Every live skill an admin approved."""
        out = []
        for slug in self.review.library.slugs():
            try:
                await self.approved(slug)
            except SkillError:
                continue
            out.append(slug)
        return out

    async def export_to(self, slugs: Sequence[str], into: Path) -> list[Path]:
        """Each skill as `<into>/<slug>/` (SKILL.md and its files); nothing written when one of
        them cannot be exported."""
        texts = [(slug, (await self.approved(slug))[0]) for slug in slugs]
        return [write_export(self.review.library, slug, text, into) for slug, text in texts]

    async def export_zip(self, slug: str) -> bytes:
        """One approved skill as a .zip of its folder."""
        text, _ = await self.approved(slug)
        return zip_export(self.review.library, slug, text)
