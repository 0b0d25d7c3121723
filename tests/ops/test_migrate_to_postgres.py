"""`skillgate migrate-to-postgres`: a used SQLite data dir moves to PostgreSQL intact."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gateway.config import Settings
from gateway.ops.migrate import SKIPPED, TABLES
from gateway.store import SqliteStore, Store
from gateway.store.postgres import PostgresStore
from tests.fakes.openai_server import FakeOpenAI
from tests.serve_process import serving, skillgate
from tests.synthesis_support import answer, gateway, proposal, synth_settings


async def used_data_dir(settings: Settings, fake_llm: FakeOpenAI) -> None:
    """A data dir after some real use: chats, ratings, a pass, one approval, one rejection."""
    async with gateway(settings) as gw:
        for n in range(3):
            await gw.seed(question=f"question {n}", rating=-1 if n else 1)
        formal = proposal(
            "formal-letters",
            description="Write formal letters: use when a user writes to an authority.",
            content="# Formal letters\n\nUse full sentences, a greeting and a polite closing.",
        )
        fake_llm.reply(answer(proposal("chat-brevity"), formal))
        await gw.synthesize()
        pending = await gw.parts.store.pending_proposals()
        assert len(pending) == 2
        status, _ = await gw.call("POST", f"/proposals/{pending[0].id}/approve")
        assert status == 200
        status, _ = await gw.call(
            "POST", f"/proposals/{pending[1].id}/reject", {"reason": "not our tone"}
        )
        assert status == 200


async def everything(store: Store) -> dict[str, Any]:
    """What the gateway reads back, through the public store methods."""
    sessions = await store.session_summaries(limit=100)
    return {
        "proposals": await store.list_proposals(),
        "rejections": await store.rejections(),
        "skills": await store.skill_records(),
        "runs": await store.list_runs(),
        "feedback": await store.list_feedback(),
        "feedback_counts": await store.feedback_counts(),
        "proposal_counts": await store.proposal_counts(),
        "sessions": sessions,
        "transcripts": [await store.session_transcript(s.id) for s in sessions],
        "tallies": await store.skill_tallies(),
        "versions": await store.skill_versions("chat-brevity"),
    }


async def test_a_used_data_dir_moves_to_postgres_intact(
    make_settings: Callable[..., Settings],
    fake_llm: FakeOpenAI,
    postgres_url: str,
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    await used_data_dir(settings, fake_llm)
    env = {"SKILLGATE_DATA_DIR": str(settings.data_dir), "SKILLGATE_DATABASE_URL": postgres_url}

    status, out, err = await skillgate("migrate-to-postgres", env=env, timeout=60)
    assert status == 0, err
    assert "copied" in out and "proposals 2" in out

    async with SqliteStore(settings.db_path) as before, PostgresStore(postgres_url) as after:
        assert await everything(after) == await everything(before)
        # New rows continue after the copied ids instead of colliding with them.
        last = (await before.list_runs(1))[0].id
        assert await after.start_run("manual", "fake-model", 5.0) == last + 1

    # Running it again would duplicate everything: it refuses.
    status, _, err = await skillgate("migrate-to-postgres", env=env, timeout=60)
    assert status == 1
    assert "already holds data" in err

    # The gateway starts on the migrated database with the same data dir and skills.
    async with serving(env=env | {"LLM_BASE_URL": fake_llm.base_url}) as served:
        assert served.health["status"] == "ok"
        assert served.health["skills_enabled"] == 4  # three bundled and the approved one
    assert served.returncode == 0, served.stderr


async def test_every_table_is_copied_or_deliberately_left(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "db.sqlite"):
        pass
    with sqlite3.connect(tmp_path / "db.sqlite") as conn:
        tables = {
            r[0]
            for r in conn.execute(
                "select name from sqlite_master where type = 'table' and name not like 'sqlite_%'"
            )
        }
    assert tables == set(TABLES) | set(SKIPPED)


async def test_it_needs_a_database_url_and_a_sqlite_file(tmp_path: Path) -> None:
    env = {"SKILLGATE_DATA_DIR": str(tmp_path / "empty")}
    status, _, err = await skillgate("migrate-to-postgres", env=env)
    assert status == 2 and "SKILLGATE_DATABASE_URL" in err
    url = "postgresql://nobody:hunter2@127.0.0.1:1/none"
    status, _, err = await skillgate(
        "migrate-to-postgres", env=env | {"SKILLGATE_DATABASE_URL": url}
    )
    assert status == 1 and "no SQLite database" in err
    assert "hunter2" not in err
