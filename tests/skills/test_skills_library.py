"""Skill files: names, containment (reads included), parsing, seeding and registration."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gateway.errors import InvalidSkill, InvalidSlug, PathEscape, SkillNotFound
from gateway.skills.catalog import SkillCatalog, bundled_skills_dir
from gateway.skills.library import Skill, SkillLibrary, parse_skill, render_skill, validate_slug
from gateway.store import SqliteStore


@pytest.mark.parametrize("slug", ["a", "pdf-tools", "x1-2-3", "a" * 64])
def test_valid_slugs_are_accepted(slug: str) -> None:
    assert validate_slug(slug) == slug


@pytest.mark.parametrize(
    "slug",
    [
        "",
        "A",
        "-a",
        "a-",
        "a--b",
        "a_b",
        "a b",
        "..",
        "../x",
        "/etc",
        "a/b",
        "a" * 65,
        "é",
        "a\x00",
    ],
)
def test_invalid_slugs_are_refused(slug: str) -> None:
    with pytest.raises(InvalidSlug):
        validate_slug(slug)


def test_paths_cannot_leave_the_root(tmp_path: Path) -> None:
    lib = SkillLibrary(tmp_path / "skills")
    (tmp_path / "skills").mkdir()
    for bad in ("..", "../etc", "/etc/passwd", "a/../../b"):
        with pytest.raises((InvalidSlug, PathEscape)):
            lib.read_text(bad)
    for bad_file in ("../SKILL.md", "/etc/passwd", "..", "sub/x.md"):
        with pytest.raises(PathEscape):
            lib.path_for("ok", bad_file)


def test_a_symlink_pointing_out_of_the_root_is_refused_for_reads_and_writes(
    tmp_path: Path,
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "SKILL.md").write_text("---\nname: evil\ndescription: x\n---\nsecret\n")
    root = tmp_path / "skills"
    root.mkdir()
    os.symlink(outside, root / "evil")
    lib = SkillLibrary(root)
    with pytest.raises(PathEscape):
        lib.read("evil")
    with pytest.raises(PathEscape):
        lib.write_text("evil", "x")
    assert lib.slugs() == []
    # a link to a file outside, inside a genuine folder, is refused too
    (root / "fine").mkdir()
    os.symlink(outside / "SKILL.md", root / "fine" / "SKILL.md")
    with pytest.raises(PathEscape):
        lib.read_text("fine")


def test_render_then_parse_round_trips(tmp_path: Path) -> None:
    skill = Skill(
        name="metric-units",
        description="Use metric units: kilometres, kilograms, Celsius.",
        body="# Metric\n\nAlways convert to metric.",
        metadata={"source": "auto", "based_on": "1,2"},
    )
    lib = SkillLibrary(tmp_path)
    lib.write_text("metric-units", render_skill(skill))
    assert lib.read("metric-units") == skill
    assert lib.read("metric-units").source == "auto"


@pytest.mark.parametrize(
    "text",
    [
        "no frontmatter",
        "---\nname: [unclosed\n---\nbody",
        "---\n- a list\n---\nbody",
        "---\nname: ok\n---\nbody",  # no description
        "---\nname: Bad Name\ndescription: d\n---\nbody",
        "---\nname: other\ndescription: d\n---\nbody",  # differs from folder
        "---\nname: ok\ndescription: " + "x" * 1025 + "\n---\nbody",
    ],
)
def test_malformed_skill_files_are_refused(text: str) -> None:
    with pytest.raises((InvalidSkill, InvalidSlug)):
        parse_skill(text, expect_name="ok")


def test_reading_a_missing_skill_says_not_found(tmp_path: Path) -> None:
    with pytest.raises(SkillNotFound):
        SkillLibrary(tmp_path).read("nothing-here")


def test_every_bundled_skill_is_valid_and_says_so() -> None:
    bundled = bundled_skills_dir()
    assert bundled is not None
    lib = SkillLibrary(bundled)
    assert len(lib.slugs()) >= 3
    for slug in lib.slugs():
        skill = lib.read(slug)
        assert skill.source == "bundled"
        assert len(skill.body) > 200


async def test_bundled_skills_are_seeded_once_and_a_dropped_in_skill_is_custom(
    tmp_path: Path,
) -> None:
    bundled = bundled_skills_dir()
    root = tmp_path / "skills"
    async with SqliteStore(tmp_path / "db.sqlite") as store:
        catalog = SkillCatalog(SkillLibrary(root), store)
        await catalog.sync(bundled)
        records = {r.slug: r for r in await store.skill_records()}
        assert {r.source for r in records.values()} == {"bundled"}
        assert set(records) == set(catalog.enabled)

        # The operator edits one bundled skill and deletes another: both choices stand.
        edited = "---\nname: writing-for-chat\ndescription: mine now\n---\nMy rules.\n"
        (root / "writing-for-chat" / "SKILL.md").write_text(edited)
        (root / "summarize-text" / "SKILL.md").unlink()
        (root / "summarize-text").rmdir()
        (root / "my-own").mkdir()
        (root / "my-own" / "SKILL.md").write_text(
            "---\nname: my-own\ndescription: A person's own skill.\n---\nDo it my way.\n"
        )
        await catalog.sync(bundled)

        assert catalog.library.read_text("writing-for-chat") == edited
        assert not (root / "summarize-text").exists()
        own = await store.get_skill_record("my-own")
        assert own is not None and own.source == "custom" and own.enabled
        assert catalog.load("my-own") == "Do it my way."
        assert "summarize-text" not in catalog.enabled
