"""`skillgate skills import PATH|URL` and `skillgate skills export NAME|--all DIR`.

An import becomes a proposal like a learned one (screened, checked, a card to every admin,
live only once approved); an export writes approved skills as Agent Skills folders.
"""

from __future__ import annotations

import sys
from pathlib import Path

from gateway.config import Settings
from gateway.errors import SkillError
from gateway.runtime.assembly import chat_cards, close_parts, open_parts
from gateway.runtime.transfer import Imported


def print_import(done: Imported, what: str) -> int:
    """What came of an import; status 0 when a proposal waits for review."""
    for line in done.left_out:
        print(f"left out {line}")
    if done.proposal_id is not None:
        p = done.summary.proposed[0]
        kind = "new skill" if p.kind == "create" else f"update of {p.target or p.name}"
        print(
            f"proposed #{p.id} {p.name} ({kind}, waiting for review): imported from {what};"
            " it goes live only once an admin approves it"
        )
        return 0
    print(f"skillgate: {what} was not imported: {done.refusal}", file=sys.stderr)
    return 1


async def run_import(settings: Settings, source: str, decider: str) -> int:
    """Import a folder, SKILL.md, .zip/.skill or http(s) address as a proposal."""
    parts = await open_parts(settings)
    try:
        assert parts.transfer is not None
        async with chat_cards(parts):  # the card reaches the admins' chats now
            try:
                via = f"CLI ({decider.removeprefix('cli:')})"
                if source.startswith(("https://", "http://")):
                    done = await parts.transfer.import_url(source, via)
                else:
                    done = await parts.transfer.import_path(Path(source), via)
            except SkillError as exc:
                print(f"skillgate: {source} was not imported: {exc}", file=sys.stderr)
                return 1
    finally:
        await close_parts(parts)
    return print_import(done, source)


async def run_export(settings: Settings, names: list[str], every: bool, into: Path) -> int:
    """Write approved skills into `into`, one folder each."""
    parts = await open_parts(settings)
    try:
        assert parts.transfer is not None
        try:
            slugs = await parts.transfer.approved_slugs() if every else names
            written = await parts.transfer.export_to(slugs, into)
        except SkillError as exc:
            print(f"skillgate: nothing exported: {exc}", file=sys.stderr)
            return 1
    finally:
        await close_parts(parts)
    for folder in written:
        print(f"exported {folder.name} to {folder}")
    if not written:
        print("no skill an admin approved to export")
    return 0
