"""Attribution in the store: which rated answers count for a skill, and from when."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest
from sqlite_utils import Database

from gateway.core.records import SkillRecord
from gateway.errors import StoreError
from gateway.store import Store
from gateway.store.migrations import MIGRATIONS
from gateway.store.sqlite import migrate
from tests.effect_support import seed_answer


def record(slug: str, digest: str = "h1", at: float = 0.0, enabled: bool = True) -> SkillRecord:
    return SkillRecord(
        slug=slug,
        source="custom",
        enabled=enabled,
        content_hash=digest,
        created_at=0.0,
        updated_at=at,
    )


async def test_each_rated_answer_counts_toward_loaded_offered_or_withheld_skills(
    any_store: Store,
) -> None:
    await any_store.put_skill_records([record("soup"), record("bikes"), record("idle")])
    await seed_answer(any_store, loaded=["soup"], offered=["bikes"], ratings=(1,))
    await seed_answer(any_store, loaded=["soup"], offered=["bikes"], ratings=(-1,))
    # A group answer counts once, by majority; a tie counts as unrated.
    await seed_answer(any_store, loaded=["soup"], ratings=(1, 1, -1))
    await seed_answer(any_store, loaded=["soup"], ratings=(1, -1))
    await seed_answer(any_store, loaded=["soup"], ratings=())
    await seed_answer(any_store, offered=["soup", "bikes"], ratings=(1,))
    await seed_answer(any_store, offered=["bikes"], withheld=["soup"], ratings=(-1,))
    # Error placeholders carry no rating buttons; skills no longer registered are ignored.
    await seed_answer(any_store, loaded=["soup"], kind="error", ratings=())
    await seed_answer(any_store, loaded=["gone"], ratings=(1,))

    tallies = await any_store.skill_tallies()
    assert sorted(tallies) == ["bikes", "idle", "soup"]
    soup = tallies["soup"]
    assert (soup.loaded.answers, soup.loaded.up, soup.loaded.down) == (5, 2, 1)
    assert (soup.offered.answers, soup.offered.up, soup.offered.down) == (1, 1, 0)
    assert (soup.withheld.answers, soup.withheld.up, soup.withheld.down) == (1, 0, 1)
    bikes = tallies["bikes"]
    assert bikes.loaded.answers == 0
    assert (bikes.offered.answers, bikes.offered.up, bikes.offered.down) == (4, 2, 2)
    assert tallies["idle"].loaded.answers == tallies["idle"].offered.answers == 0


async def test_a_skill_is_measured_from_when_its_current_text_took_effect(any_store: Store) -> None:
    await any_store.put_skill_records([record("soup")])
    for _ in range(3):
        await seed_answer(any_store, loaded=["soup"], ratings=(-1,))
    # Disabling and enabling it again keeps its figures: the text is the same.
    await any_store.put_skill_records([record("soup", at=time.time(), enabled=False)])
    await any_store.put_skill_records([record("soup", at=time.time())])
    assert (await any_store.skill_tallies())["soup"].loaded.down == 3

    changed = time.time()
    await any_store.put_skill_records([record("soup", digest="h2", at=changed)])
    await seed_answer(any_store, loaded=["soup"], ratings=(1,))
    soup = (await any_store.skill_tallies())["soup"]
    assert (soup.loaded.up, soup.loaded.down) == (1, 0)
    assert soup.since == changed and soup.content_hash == "h2"


async def test_a_recorded_look_holds_for_its_text_only(any_store: Store) -> None:
    await any_store.put_skill_records([record("soup"), record("bikes")])
    soup = (await any_store.skill_tallies())["soup"]
    assert (soup.looked, soup.reached) == (-1, None)  # never looked at
    bikes = (await any_store.skill_tallies())["bikes"].model_copy(update={"looked": 2})
    await any_store.record_looks([soup.model_copy(update={"looked": 3}), bikes], at=1.0)
    await any_store.record_looks(
        [soup.model_copy(update={"looked": 5, "reached": "harmful"})], at=2.0
    )
    tallies = await any_store.skill_tallies()
    assert (tallies["soup"].looked, tallies["soup"].reached) == (5, "harmful")
    assert (tallies["bikes"].looked, tallies["bikes"].reached) == (2, None)
    # A new text starts from no look: the verdict was on the old one.
    await any_store.put_skill_records([record("soup", digest="h2", at=time.time())])
    soup = (await any_store.skill_tallies())["soup"]
    assert (soup.looked, soup.reached) == (-1, None)


async def test_exposure_sessions_are_those_with_rated_loaded_answers_newest_first(
    any_store: Store,
) -> None:
    await any_store.put_skill_records([record("soup")])
    first, _ = await seed_answer(any_store, loaded=["soup"], ratings=(-1,))
    await seed_answer(any_store, loaded=["soup"], ratings=())
    await seed_answer(any_store, offered=["soup"], ratings=(1,))
    last, _ = await seed_answer(any_store, loaded=["soup"], ratings=(1,))
    assert await any_store.exposure_sessions("soup") == [last, first]
    assert await any_store.exposure_sessions("soup", limit=1) == [last]
    assert await any_store.exposure_sessions("other") == []


def test_the_upgrade_keeps_every_proposal_its_id_and_its_references(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "db.sqlite")
    db = Database(conn)
    db.execute("pragma foreign_keys = on")
    migrate(db, [m for m in MIGRATIONS if m[0] < 6])
    db.execute("insert into synthesis_runs (trigger, started_at) values ('cli', 1)")
    for name in ("a", "b", "c"):
        db.execute(
            "insert into proposals (run_id, kind, name, description, content, content_hash,"
            " generated_at, status) values (1, 'update', ?, 'd', 'c', 'h', 1, 'rejected')",
            [name],
        )
    db.execute("delete from proposals where name = 'c'")  # ids are never reused
    db.execute(
        "insert into rejections (proposal_id, kind, name, description, content_hash,"
        " rejected_at) values (2, 'update', 'b', 'd', 'h', 1)"
    )
    db.execute(
        "insert into skill_versions (slug, content, content_hash, replaced_at, proposal_id)"
        " values ('a', 'old', 'h0', 1, 1)"
    )
    db.execute(
        "insert into skills (slug, source, content_hash, created_at, updated_at)"
        " values ('a', 'auto', 'h', 1, 5)"
    )

    assert migrate(db, [m for m in MIGRATIONS if m[0] <= 6]) == [6]
    assert [(r["id"], r["name"]) for r in db.query("select id, name from proposals")] == [
        (1, "a"),
        (2, "b"),
    ]
    assert db.execute("pragma foreign_key_check").fetchall() == []
    assert {
        r["name"]
        for r in db.query(
            "select name from sqlite_master where type = 'index' and tbl_name = 'proposals'"
        )
    } == {
        "proposals_status",
        "proposals_name",
    }
    assert [r["content_since"] for r in db.query("select content_since from skills")] == [5]
    cur = db.execute(
        "insert into proposals (kind, name, description, content, content_hash, generated_at)"
        " values ('retire', 'a', 'd', 'c', 'h', 1)"
    )
    assert cur.lastrowid == 4
    for bad in (
        "insert into proposals (kind, name, description, content, content_hash, generated_at)"
        " values ('delete', 'a', 'd', 'c', 'h', 1)",
        "insert into rejections (proposal_id, kind, name, description, content_hash,"
        " rejected_at) values (99, 'retire', 'a', 'd', 'h', 1)",
    ):
        with pytest.raises(sqlite3.IntegrityError):
            db.execute(bad)


def test_the_upgrade_refuses_rather_than_cascade_deletes_rows_that_reference_proposals(
    tmp_path: Path,
) -> None:
    db = Database(sqlite3.connect(tmp_path / "db.sqlite"))
    db.execute("pragma foreign_keys = on")
    migrate(db, [m for m in MIGRATIONS if m[0] < 6])
    db.execute(
        "insert into proposals (kind, name, description, content, content_hash, generated_at)"
        " values ('create', 'a', 'd', 'c', 'h', 1)"
    )
    db.execute(
        "create table notes (id integer primary key,"
        " proposal_id integer references proposals(id) on delete cascade)"
    )
    db.execute("insert into notes (proposal_id) values (1)")
    with pytest.raises(StoreError, match="notes references proposals"):
        migrate(db)
    assert db.execute("select count(*) from notes").fetchone() == (1,)
    assert 6 not in {r["version"] for r in db.query("select version from schema_migrations")}


async def test_start_up_finds_the_same_settled_skills_without_measuring_each_in_full() -> None:
    from gateway.skills.effect import (
        EffectThresholds,
        SkillTallies,
        Tally,
        holdout_state,
        settled,
        short_of_comparison,
        skill_effects,
    )

    shapes = [
        (0, 0, 0, 0),
        (19, 10, 30, 12),
        (25, 20, 30, 10),
        (40, 5, 40, 35),
        (20, 12, 20, 9),
        (200, 140, 180, 126),
        (30, 20, 4, 3),
        (55, 38, 60, 40),
    ]
    tallies = {
        f"s{i}": SkillTallies(
            name=f"s{i}",
            content_hash=f"h{i}",
            loaded=Tally(answers=lr, up=lu, down=lr - lu),
            withheld=Tally(answers=wr, up=wu, down=wr - wu),
        )
        for i, (lr, lu, wr, wu) in enumerate(shapes)
    }
    # Verdicts reached at recorded looks (the counts alone decide nothing).
    tallies["s2"].looked, tallies["s2"].reached = 5, "harmful"
    tallies["s3"].looked, tallies["s3"].reached = 5, "helpful"

    class Tallies:
        async def skill_tallies(self) -> dict[str, SkillTallies]:
            return tallies

    thresholds = EffectThresholds()
    found, lagging = await holdout_state(Tallies(), thresholds)
    effects = await skill_effects(Tallies(), thresholds)
    assert found == settled(effects, thresholds)
    assert lagging == short_of_comparison(effects, thresholds)
    # A verdict either way, or no clear effect with 50 rated answers on both sides and a harm
    # (or help) of the margin's size ruled out: s7's interval still reaches it.
    assert found == {"s2": "h2", "s3": "h3", "s5": "h5"}
    assert lagging == {"s0", "s6"}  # no comparison yet, or far less of it than uses
