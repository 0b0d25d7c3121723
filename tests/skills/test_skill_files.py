"""Start-up with a library: unchanged skill files are neither read nor parsed again."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from gateway.skills import files as files_module
from gateway.skills.catalog import SkillCatalog
from gateway.skills.library import Skill, SkillFile, SkillLibrary, parse_skill
from gateway.store import Store

HOUR_AGO = time.time() - 3600


def write_skill(root: Path, slug: str, description: str, *, at: float | None = HOUR_AGO) -> Path:
    path = root / slug / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nname: {slug}\ndescription: {description}\n---\nSteps for {slug}.\n")
    if at is not None:
        os.utime(path, (at, at))
    return path


class Counting:
    """Counts the files read and parsed by the catalog."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.reads: list[str] = []
        self.parses: list[str] = []
        real_read = SkillLibrary.read_file

        def read_file(library: SkillLibrary, file: SkillFile) -> str:
            self.reads.append(file.slug)
            return real_read(library, file)

        def parse(text: str, *, expect_name: str | None = None) -> Skill:
            self.parses.append(expect_name or "")
            return parse_skill(text, expect_name=expect_name)

        monkeypatch.setattr(SkillLibrary, "read_file", read_file)
        monkeypatch.setattr(files_module, "parse_skill", parse)

    def clear(self) -> None:
        self.reads.clear()
        self.parses.clear()


async def restart(root: Path, store: Store) -> SkillCatalog:
    """A new process's catalog over the same files and database."""
    catalog = SkillCatalog(SkillLibrary(root), store)
    await catalog.sync(None)
    return catalog


def offered(catalog: SkillCatalog, query: str) -> str:
    return catalog.offer(query, 800)[1]


async def test_a_restart_reads_no_unchanged_file_and_sees_every_change(
    any_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "skills"
    for slug, topic in (("bread", "baking bread"), ("visa", "visa papers"), ("tax", "tax forms")):
        write_skill(root, slug, f"Use for {topic}.")
    count = Counting(monkeypatch)
    first = await restart(root, any_store)
    assert sorted(count.parses) == ["bread", "tax", "visa"]
    assert first.enabled == {"bread", "tax", "visa"}

    count.clear()
    warm = await restart(root, any_store)
    assert count.reads == [] and count.parses == []
    assert warm.enabled == {"bread", "tax", "visa"}
    assert "Use for baking bread." in offered(warm, "how do I bake bread?")

    # An edit is seen: read, parsed, and registered with its new hash.
    before = await any_store.get_skill_record("bread")
    write_skill(root, "bread", "Use for sourdough starters.", at=None)
    # Touched without a change: read again (its time moved) but not parsed.
    visa = root / "visa" / "SKILL.md"
    os.utime(visa, (HOUR_AGO + 60, HOUR_AGO + 60))
    (root / "tax" / "SKILL.md").unlink()
    count.clear()
    edited = await restart(root, any_store)
    assert sorted(count.reads) == ["bread", "visa"] and count.parses == ["bread"]
    after = await any_store.get_skill_record("bread")
    assert before is not None and after is not None and after.content_hash != before.content_hash
    assert "sourdough" in offered(edited, "sourdough starter")
    assert edited.enabled == {"bread", "visa"}
    assert set(await any_store.skill_files()) == {"bread", "visa"}  # the deleted one forgotten


async def test_a_file_rewritten_within_the_clock_tick_of_its_check_is_not_trusted(
    any_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "skills"
    path = write_skill(root, "bread", "Use for baking bread.", at=None)  # written just now
    first = await restart(root, any_store)
    assert "baking bread" in offered(first, "bread")
    stamp = path.stat().st_mtime_ns
    # Same length, same modification time: only the content tells.
    write_skill(root, "bread", "Use for baking bagel.", at=None)
    os.utime(path, ns=(stamp, stamp))
    count = Counting(monkeypatch)
    again = await restart(root, any_store)
    assert count.reads == ["bread"] and count.parses == ["bread"]
    assert "baking bagel" in offered(again, "bagel")


async def test_a_folder_linked_from_outside_the_root_is_still_refused(
    any_store: Store, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    write_skill(outside, "evil", "Use for everything.")
    root = tmp_path / "skills"
    write_skill(root, "fine", "Use for fine things.")
    os.symlink(outside / "evil", root / "evil")
    (root / "linked").mkdir()
    os.symlink(outside / "evil" / "SKILL.md", root / "linked" / "SKILL.md")
    inside = root / "fine"
    os.symlink(inside, root / "alias")  # a link that stays inside the root is a skill folder
    catalog = await restart(root, any_store)
    assert [f.slug for f in catalog.library.scan()] == ["alias", "fine"]
    assert "evil" not in catalog.enabled and "linked" not in catalog.enabled
