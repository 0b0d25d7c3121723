"""A real PostgreSQL server for the tests: one fresh schema per test.

`SKILLGATE_TEST_POSTGRES_URL` names the server (`scripts/test` and CI start one with
`scripts/postgres`); without it the PostgreSQL tests skip, saying so.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator
from urllib.parse import urlencode, urlsplit, urlunsplit

import asyncpg
import pytest

POSTGRES_URL = os.environ.get("SKILLGATE_TEST_POSTGRES_URL", "")
NO_SERVER = (
    "no PostgreSQL server for the tests: set SKILLGATE_TEST_POSTGRES_URL, or install Debian's"
    " postgresql and run ./scripts/test, which starts one with scripts/postgres"
)


def require_postgres() -> str:
    if not POSTGRES_URL:
        pytest.skip(NO_SERVER)
    return POSTGRES_URL


def with_schema(url: str, schema: str) -> str:
    """The URL with a search_path, which asyncpg passes on as a server setting."""
    parts = urlsplit(url)
    query = "&".join(q for q in (parts.query, urlencode({"search_path": schema})) if q)
    return urlunsplit(parts._replace(query=query))


async def fresh_schema() -> tuple[str, str]:
    """Create an empty schema; returns (its name, a URL that uses it)."""
    url = require_postgres()
    name = f"t_{secrets.token_hex(6)}"
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(f"create schema {name}")
    finally:
        await conn.close()
    return name, with_schema(url, name)


async def drop_schema(name: str) -> None:
    conn = await asyncpg.connect(POSTGRES_URL)
    try:
        await conn.execute(f"drop schema if exists {name} cascade")
    finally:
        await conn.close()


@pytest.fixture
async def postgres_url() -> AsyncIterator[str]:
    """A URL to an empty schema of the test server, dropped after the test."""
    name, url = await fresh_schema()
    try:
        yield url
    finally:
        await drop_schema(name)


@pytest.fixture(params=["sqlite", "postgres"])
async def database(request: pytest.FixtureRequest) -> AsyncIterator[dict[str, str]]:
    """Settings for a gateway on each backend: the data dir's SQLite file, or a fresh schema."""
    if request.param == "sqlite":
        yield {}
        return
    name, url = await fresh_schema()
    try:
        yield {"database_url": url}
    finally:
        await drop_schema(name)
