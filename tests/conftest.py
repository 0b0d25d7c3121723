"""Shared fixtures: settings in a temp data dir, the fake model, the app with a FakeChannel."""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.channels.registry import platforms
from gateway.config import Settings
from gateway.store import SqliteStore, Store
from tests.fakes.line_api import FakeLineAPI
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegramAPI
from tests.line_support import LineRig, line_rig
from tests.pg_support import drop_schema, fresh_schema, postgres_url

__all__ = ["postgres_url"]  # a fixture, shared with every test module

os.environ["NO_PROXY"] = "127.0.0.1,localhost"
os.environ["no_proxy"] = "127.0.0.1,localhost"
os.environ.setdefault("PTB_TIMEDELTA", "1")

# The gateway's own variables, and each platform's (read once: the registry scans the
# installed packages' entry points).
_OUR_VARS = ("SKILLGATE_", "LLM_", *(p.settings_prefix for p in platforms()))


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test sees the developer's own settings or .env."""
    for name in list(os.environ):
        if name.startswith(_OUR_VARS):
            monkeypatch.delenv(name)
    # A checkout whose .venv holds the on-board model (./scripts/serve installs it) tests as
    # any other: a command with no model configured says so (tests/test_first_run.py
    # turns the default back on).
    monkeypatch.setenv("LLM_ON_BOARD_DEFAULT", "false")
    monkeypatch.chdir(tmp_path)


@pytest.fixture(autouse=True)
def _root_logging_restored() -> Iterator[None]:
    """A command run in-process (`main([...])`) sets up logging for the whole process: each
    test gets the root logger back as it found it, so the next one's log capture works."""
    root = logging.getLogger()
    level, handlers = root.level, root.handlers[:]
    yield
    root.setLevel(level)
    root.handlers[:] = handlers


@pytest.fixture
async def fake_llm() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as fake:
        yield fake


@pytest.fixture
async def telegram_api() -> AsyncIterator[FakeTelegramAPI]:
    """The loopback Bot API fake."""
    async with FakeTelegramAPI() as fake:
        yield fake


@pytest.fixture
async def line_api() -> AsyncIterator[FakeLineAPI]:
    """The loopback LINE Messaging API fake."""
    async with FakeLineAPI() as fake:
        yield fake


@pytest.fixture
def make_settings(tmp_path: Path) -> Callable[..., Settings]:
    """Settings for a test: a temp data dir, fast model retries, overrides by field name."""

    def make(**overrides: Any) -> Settings:
        values: dict[str, Any] = {
            "data_dir": tmp_path / "data",
            "llm_timeout_seconds": 5,
            "llm_max_retries": 2,
            # The holdout withholds skills at random; tests of it ask for it (and seed it).
            "skill_holdout": 0.0,
            # A trial answers rated turns again: tests of it ask for it (and script it).
            "trial_turns_per_side": 0,
        }
        values.update(overrides)
        return Settings(_env_file=None, **values)  # type: ignore[call-arg]

    return make


@pytest.fixture
def settings(make_settings: Callable[..., Settings], fake_llm: FakeOpenAI) -> Settings:
    return make_settings(
        llm_base_url=fake_llm.base_url, llm_model="fake-model", admin_token="admin-secret-token"
    )


@pytest.fixture(params=["sqlite", "postgres"])
async def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    """An open, migrated store on each backend: the store tests run on both."""
    if request.param == "sqlite":
        async with SqliteStore(tmp_path / "db.sqlite") as store:
            yield store
        return
    from gateway.store.postgres import PostgresStore

    name, url = await fresh_schema()
    try:
        async with PostgresStore(url) as pg:
            yield pg
    finally:
        await drop_schema(name)


@pytest.fixture
async def line(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> AsyncIterator[LineRig]:
    """The gateway with the LINE channel against the fake LINE API and model."""
    async with line_rig(make_settings, fake_llm) as rig:
        yield rig
