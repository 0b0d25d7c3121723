"""`skillgate backup` while serving, and a restore that gives a working gateway."""

from __future__ import annotations

import io
import tarfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from gateway.app import PARTS, build_app
from gateway.config import Settings
from gateway.errors import ConfigError
from gateway.ops.backup import create_backup, restore_backup
from tests.fakes.channel import FakeChannel
from tests.fakes.openai_server import FakeOpenAI
from tests.serve_process import skillgate
from tests.store_support import current_session, history

AUTH = {"Authorization": "Bearer admin-secret-token"}
CUSTOM_SKILL = """---
name: door-colours
description: Use when someone asks which colour a door is.
---
The front door is blue.
"""


async def test_a_backup_taken_while_serving_restores_into_a_working_data_dir(
    make_settings: Callable[..., Settings],
    settings: Settings,
    fake_llm: FakeOpenAI,
    aiohttp_client: Callable[..., TestClient],
    tmp_path: Path,
) -> None:
    skill = settings.skills_dir / "door-colours" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text(CUSTOM_SKILL)
    (settings.data_dir / "persona.md").write_text("You are Doorkeeper, terse and exact.")
    channel = FakeChannel(settings)
    runner = web.AppRunner(build_app(settings, channels=[channel]))
    await runner.setup()
    try:
        fake_llm.reply("Noted: the door is blue.")
        await channel.accept("1", "c1", "remember: the door is blue")
        await channel.wait_sent(1)
        await runner.app[PARTS].worker.wait_idle(5)
        # Another process backs up while this one keeps the database open.
        env = {"SKILLGATE_DATA_DIR": str(settings.data_dir)}
        code, out, err = await skillgate("backup", str(tmp_path), env=env)
    finally:
        await runner.cleanup()
    assert code == 0, err
    [archive] = tmp_path.glob("skillgate-*.tar.gz")
    assert out.startswith(f"wrote {archive}")
    assert "skillgate.db (schema v" in out and "persona.md" in out
    assert archive.stat().st_mode & 0o077 == 0  # conversations: owner only

    restored = make_settings(
        data_dir=tmp_path / "restored",
        llm_base_url=fake_llm.base_url,
        llm_model="fake-model",
        admin_token="admin-secret-token",
    )
    env = {"SKILLGATE_DATA_DIR": str(restored.data_dir)}
    code, out, err = await skillgate("restore", str(archive), env=env)
    assert code == 0, err
    assert f"into {restored.data_dir}" in out

    app = build_app(restored, channels=[FakeChannel(restored)])
    client = await aiohttp_client(app)
    health = await client.get("/healthz")
    assert health.status == 200 and (await health.json())["status"] == "ok"
    skills = {
        s["name"]: s for s in await (await client.get("/admin/api/skills", headers=AUTH)).json()
    }
    assert skills["door-colours"]["source"] == "custom"
    store = app[PARTS].store
    session = await current_session(store, "fake", "c1", "u1", time.time(), 3600)
    texts = [m.text for m in await history(store, session.id, limit=10)]
    assert texts == ["remember: the door is blue", "Noted: the door is blue."]
    assert "Doorkeeper" in app[PARTS].agent.config.persona


async def test_restore_keeps_existing_data_unless_forced(
    settings: Settings, fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    runner = web.AppRunner(build_app(settings, channels=[]))
    await runner.setup()
    await runner.cleanup()
    archive = create_backup(settings, tmp_path / "one.tar.gz").path
    with pytest.raises(ConfigError, match="--force"):
        restore_backup(settings, archive)
    summary, aside = restore_backup(settings, archive, force=True)
    assert aside is not None and (aside / "skillgate.db").is_file()
    assert (settings.data_dir / "skillgate.db").is_file()
    assert summary.skills and summary.schema_versions


@pytest.mark.parametrize("name", ["../escape.txt", "/etc/cron.d/x", "notes.txt"])
def test_restore_refuses_entries_outside_a_backup(
    make_settings: Callable[..., Settings], tmp_path: Path, name: str
) -> None:
    archive = tmp_path / "evil.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for entry in ("skillgate.db", name):
            info = tarfile.TarInfo(entry)
            info.size = 2
            tar.addfile(info, io.BytesIO(b"hi"))
    settings = make_settings(data_dir=tmp_path / "data")
    with pytest.raises(ConfigError, match="unexpected entry"):
        restore_backup(settings, archive)
    assert not (tmp_path / "escape.txt").exists()
    assert not settings.data_dir.exists()


def test_with_postgres_backup_and_restore_point_to_pg_dump(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    settings = make_settings(database_url="postgresql://u:secret@127.0.0.1:5432/db")
    settings.data_dir.mkdir(parents=True)
    with pytest.raises(ConfigError, match="pg_dump") as refused:
        create_backup(settings, tmp_path)
    assert "secret" not in str(refused.value)
    with pytest.raises(ConfigError, match="pg_dump"):
        restore_backup(settings, tmp_path / "any.tar.gz")
    assert list(tmp_path.glob("*.tar.gz")) == []
