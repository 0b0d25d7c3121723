"""What start-up needs from each skill file, without reading the files that did not change.

Every start scans the library (one `lstat` per skill) and compares each file's size and
modification time with the `skill_files` record of its last read. Where both match, and
the file was already older than `SETTLED_SECONDS` when it was read (a second write
within the clock's resolution could keep both, as git's index also guards against), the
record's hash, description and proposal id stand for the file. Otherwise the file is
read and hashed, parsed only if its hash changed, and recorded again.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from gateway.core.ports import SkillFiles
from gateway.core.records import SkillFileRecord
from gateway.errors import SkillError
from gateway.skills.library import SkillFile, SkillLibrary, content_hash, parse_skill

log = logging.getLogger(__name__)

SETTLED_SECONDS = 2.0
"""How much older than its last read a file's modification time must be to be trusted."""


@dataclass(frozen=True)
class Described:
    """A valid skill file, as far as start-up cares."""

    content_hash: str
    description: str
    proposal: int | None
    """The proposal whose text the file carries (its `metadata.proposal`), if any."""
    tools: tuple[str, ...] = ()
    """The tools it names (`allowed-tools`)."""


async def describe_files(
    library: SkillLibrary, store: SkillFiles, scanned: list[SkillFile] | None = None
) -> dict[str, Described]:
    """Every valid skill file of the library, by slug; invalid ones are logged and left out.

    `scanned` is the library's `scan` if the caller has just taken it.
    """
    known = await store.skill_files()
    described: dict[str, Described] = {}
    fresh: list[SkillFileRecord] = []
    checked = time.time()
    for file in library.scan() if scanned is None else scanned:
        entry = known.get(file.slug)
        if (
            entry is not None
            and (entry.size, entry.mtime_ns) == (file.size, file.mtime_ns)
            and file.mtime_ns / 1e9 < entry.checked_at - SETTLED_SECONDS
        ):
            described[file.slug] = Described(
                entry.content_hash,
                entry.description,
                entry.proposal_id,
                tuple(entry.allowed_tools.split()),
            )
            continue
        try:
            text = library.read_file(file)
            digest = content_hash(text)
            if entry is not None and entry.content_hash == digest:
                found = Described(
                    digest, entry.description, entry.proposal_id, tuple(entry.allowed_tools.split())
                )
            else:
                skill = parse_skill(text, expect_name=file.slug)
                proposal = skill.metadata.get("proposal")
                found = Described(
                    digest,
                    skill.description,
                    proposal if isinstance(proposal, int) else None,
                    tuple(skill.allowed_tools),
                )
        except SkillError as exc:
            log.warning("skipping skill %s: %s", file.slug, exc)
            continue
        described[file.slug] = found
        fresh.append(
            SkillFileRecord(
                slug=file.slug,
                content_hash=digest,
                size=file.size,
                mtime_ns=file.mtime_ns,
                checked_at=checked,
                description=found.description,
                proposal_id=found.proposal,
                allowed_tools=" ".join(found.tools),
            )
        )
    gone = sorted(set(known) - set(described))
    if fresh or gone:
        await store.put_skill_files(fresh, gone)
    return described
