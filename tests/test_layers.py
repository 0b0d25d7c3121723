"""Dependencies point inward: the core, the conversation layer and the skills package import no
SDK, server or database code."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "gateway"
FORBIDDEN = (
    "telegram",
    "linebot",
    "aiohttp",
    "sqlite3",
    "sqlite_utils",
    "gateway.channels",
    "gateway.store",
    "gateway.app",
    "gateway.admin",
)


def imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


@pytest.mark.parametrize(
    "path",
    sorted(
        path
        for layer in ("core", "conversation", "skills", "media")
        for path in ROOT.joinpath(layer).rglob("*.py")
    ),
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_core_conversation_skills_and_media_import_no_channel_server_or_database_code(
    path: Path,
) -> None:
    bad = {
        name
        for name in imported_modules(path)
        if any(name == f or name.startswith(f + ".") for f in FORBIDDEN)
    }
    assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


def test_the_check_itself_catches_a_forbidden_import(tmp_path: Path) -> None:
    sample = tmp_path / "x.py"
    sample.write_text("import sqlite3\nfrom telegram.ext import Application\n")
    assert imported_modules(sample) == {"sqlite3", "telegram.ext"}
