"""The skill index stays within its token budget whatever the library's size."""

from __future__ import annotations

from pathlib import Path

from gateway.core.tokens import estimate_tokens
from gateway.skills.catalog import SkillCatalog
from gateway.skills.library import SkillLibrary
from gateway.skills.selection import SkillIndex, render_index
from gateway.store import SqliteStore

TOPICS = ["cooking", "taxes", "travel", "python", "gardening", "music", "fitness", "law"]


def write_library(root: Path, count: int) -> None:
    for i in range(count):
        topic = TOPICS[i % len(TOPICS)]
        folder = root / f"skill-{i}"
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: skill-{i}\ndescription: Helps with {topic} question number {i}, "
            f"with worked examples and caveats for {topic} beginners.\n---\nBody {i}.\n"
        )


async def test_ten_thousand_skills_on_disk_stay_within_the_budget(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    write_library(root, 10_000)
    root.joinpath("skill-7777", "SKILL.md").write_text(
        "---\nname: skill-7777\ndescription: Explain sourdough starter feeding schedules.\n"
        "---\nFeed it daily.\n"
    )
    async with SqliteStore(tmp_path / "db.sqlite") as store:
        catalog = SkillCatalog(SkillLibrary(root), store)
        await catalog.sync(None)
        assert len(catalog.enabled) == 10_000
        for budget in (100, 800, 4000):
            names, section = catalog.offer("how do I keep a sourdough starter alive?", budget)
            assert estimate_tokens(section) <= budget
            assert names[0] == "skill-7777"  # the relevant one comes first
            assert 0 < len(names) < 10_000


def test_relevance_orders_and_budget_cuts() -> None:
    index = SkillIndex(
        [
            ("tax-forms", "Fill in income tax forms and deadlines."),
            ("packing-list", "Packing list for travel by plane."),
            ("python-errors", "Explain Python tracebacks and errors."),
        ]
    )
    chosen = index.select("my python traceback shows an error", 1000)
    assert chosen[0].name == "python-errors"
    assert {e.name for e in chosen} == {"tax-forms", "packing-list", "python-errors"}
    small = index.select("python traceback", 40)
    assert [e.name for e in small] == ["python-errors"]
    assert estimate_tokens(render_index(small)) <= 40
    assert index.select("anything", 5) == []


def test_a_long_description_is_shortened_in_the_index() -> None:
    index = SkillIndex([("long-one", "word " * 500)])
    (entry,) = index.select("word", 10_000)
    assert len(entry.description) <= 240
