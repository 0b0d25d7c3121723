"""The catalog: the registry joined with the files, serving the agent's skill index.

Files and registry rows are the truth; the catalog is an in-memory view of the
enabled skills, rebuilt at start-up, after a review changed one skill (from what the review
wrote, `apply`) and when another replica changed the registry (`refresh`).
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from collections.abc import Collection, Mapping
from pathlib import Path

from gateway.core.ports import SkillRegistry
from gateway.core.records import SkillRecord
from gateway.errors import SkillError
from gateway.skills.files import Described, describe_files
from gateway.skills.library import SKILL_FILE, SLUG_RE, SkillLibrary, content_hash, parse_skill
from gateway.skills.selection import SkillIndex, render_index

log = logging.getLogger(__name__)
SEEDED_KEY = "bundled_skills_seeded"


def bundled_skills_dir() -> Path | None:
    """Where the skills shipped with the project are: in the wheel, or the repo's `skills/`."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "_bundled_skills", here.parent / "skills"):
        if candidate.is_dir():
            return candidate
    return None


class SkillCatalog:
    """Enabled skills for the prompt, loaded from the library and the registry."""

    def __init__(self, library: SkillLibrary, registry: SkillRegistry) -> None:
        self.library = library
        self.registry = registry
        self.index = SkillIndex()
        self._enabled: set[str] = set()
        self._hashes: dict[str, str] = {}
        self._records: dict[str, SkillRecord] = {}
        self._described: dict[str, Described] = {}
        """What the index was last built from, so that one change needs no rescan."""
        self._tools: dict[str, tuple[str, ...]] = {}
        self._settled: dict[str, str] = {}
        self._lagging: frozenset[str] = frozenset()

    async def sync(
        self,
        bundled: Path | None = None,
        now: float | None = None,
        described: Mapping[str, Described] | None = None,
    ) -> None:
        """Seed bundled skills once, register dropped-in ones, then rebuild the index.

        A file whose size and modification time are those recorded when it was last read
        is neither read nor parsed again (see `files.describe_files`): start-up with a large
        library costs a directory scan and one query. `described` is such a scan taken
        just before, if nothing changed the files since; seeding scans again.
        """
        at = time.time() if now is None else now
        self.library.root.mkdir(parents=True, exist_ok=True)
        records = {r.slug: r for r in await self.registry.skill_records()}
        changed: list[SkillRecord] = []
        seeded = set(json.loads(await self.registry.get_meta(SEEDED_KEY) or "[]"))
        for slug in self._seed(bundled, seeded):
            described = None  # the library changed
            seeded.add(slug)
            text = self.library.read_text(slug)
            records[slug] = SkillRecord(
                slug=slug,
                source="bundled",
                content_hash=content_hash(text),
                created_at=at,
                updated_at=at,
            )
            changed.append(records[slug])
        if described is None:
            described = await describe_files(self.library, self.registry)
        for slug, file in described.items():
            digest = file.content_hash
            rec = records.get(slug)
            if rec is None:
                # Nobody but a person puts files here unannounced: it is theirs.
                rec = SkillRecord(
                    slug=slug, source="custom", content_hash=digest, created_at=at, updated_at=at
                )
                log.info("registered skill %s (custom)", slug)
            elif rec.content_hash != digest:
                rec = rec.model_copy(update={"content_hash": digest, "updated_at": at})
                log.info("skill %s changed on disk", slug)
            else:
                continue
            records[slug] = rec
            changed.append(rec)
        if changed:
            await self.registry.put_skill_records(changed)
        await self.registry.set_meta(SEEDED_KEY, json.dumps(sorted(seeded)))
        self._rebuild(records, described)

    def _seed(self, bundled: Path | None, seeded: set[str]) -> list[str]:
        """Copy bundled skills never seeded before; an operator's later edits or deletions stand."""
        if bundled is None:
            return []
        copied = []
        for folder in sorted(bundled.iterdir()):
            if folder.name in seeded or not SLUG_RE.match(folder.name):
                continue
            if not (folder / SKILL_FILE).is_file():
                continue
            target = self.library.path_for(folder.name).parent
            if target.exists():
                continue
            shutil.copytree(folder, target)
            copied.append(folder.name)
            log.info("seeded bundled skill %s", folder.name)
        return copied

    async def refresh(self) -> None:
        """Rebuild the in-memory index of enabled skills from registry and files."""
        records = {r.slug: r for r in await self.registry.skill_records()}
        self._rebuild(records, await describe_files(self.library, self.registry))

    def apply(self, skill: SkillRecord, text: str | None = None) -> None:
        """One skill as a review left it (its registry row, and the SKILL.md text it wrote):
        the index is rebuilt from what it knew, without a store query or a file read."""
        described = dict(self._described)
        if text is not None:
            try:
                parsed = parse_skill(text, expect_name=skill.slug)
            except SkillError:
                described.pop(skill.slug, None)
            else:
                proposal = parsed.metadata.get("proposal")
                described[skill.slug] = Described(
                    content_hash(text),
                    parsed.description,
                    proposal if isinstance(proposal, int) else None,
                )
        self._rebuild({**self._records, skill.slug: skill}, described)

    def _rebuild(
        self, records: Mapping[str, SkillRecord], described: Mapping[str, Described]
    ) -> None:
        self._records, self._described = dict(records), dict(described)
        pairs = []
        enabled = set()
        hashes = {}
        tools = {}
        for slug in sorted(records):
            rec = records[slug]
            if not rec.enabled:
                continue
            if slug not in described:
                log.warning("enabled skill %s unreadable: missing or invalid on disk", slug)
                continue
            pairs.append((slug, described[slug].description))
            enabled.add(slug)
            hashes[slug] = rec.content_hash
            if described[slug].tools:
                tools[slug] = described[slug].tools
        self.index.replace(pairs)
        self._enabled = enabled
        self._hashes = hashes
        self._tools = tools

    def offer(
        self, query: str, budget_tokens: int, exclude: Collection[str] = ()
    ) -> tuple[list[str], str]:
        entries = self.index.select(query, budget_tokens, exclude)
        return [e.name for e in entries], render_index(entries)

    def settle(self, settled: Mapping[str, str], lagging: Collection[str] = ()) -> None:
        """Record which skill texts (name -> content hash) need no more holdout, and which
        unsettled ones have fewer rated answers without them than with them."""
        self._settled = dict(settled)
        self._lagging = frozenset(lagging)

    @property
    def evaluating(self) -> frozenset[str]:
        """Enabled skills whose current text has not reached the minimum evidence."""
        return frozenset(n for n in self._enabled if self._settled.get(n) != self._hashes.get(n))

    @property
    def short_of_comparison(self) -> frozenset[str]:
        """Skills under evaluation whose comparison lags: the holdout withholds them more often."""
        return self.evaluating & self._lagging

    def tools_of(self, name: str) -> tuple[str, ...]:
        """The tools an enabled skill names (`allowed-tools`)."""
        return self._tools.get(name, ())

    def described(self) -> list[tuple[str, str]]:
        """Each enabled skill's name and description, as the index is built from them."""
        return [(slug, self._described[slug].description) for slug in sorted(self._enabled)]

    def load(self, name: str) -> str | None:
        if name not in self._enabled:
            return None
        try:
            return self.library.read(name).body
        except SkillError:
            return None

    @property
    def enabled(self) -> frozenset[str]:
        return frozenset(self._enabled)
