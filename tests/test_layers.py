"""Dependencies point inward and down.

The core, the conversation layer and the loop's stages (synthesis, review, skills) and media
import no SDK, server or database code; and each package imports only packages below it in
`ORDER`, so the folders can be read from the bottom up. Relative imports count as the
absolute names they resolve to.
"""

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
    "asyncpg",
    "gateway.channels",
    "gateway.store",
    "gateway.app",
    "gateway.admin",
    "gateway.web",
    "gateway.runtime",
)
PURE = ("core", "conversation", "synthesis", "review", "skills", "media")
# Bottom first: a package may import the ones before it, never one after it. The top-level
# modules (errors, logs, usage, config, operator, app) take their place in the same line.
ORDER = (
    "errors",
    "shell",
    "logs",
    "i18n",
    "core",
    "usage",
    "config",
    "operator",
    "skills",
    "review",
    "synthesis",
    "media",
    "conversation",
    "store",
    "tools",
    "web",
    "channels",
    "runtime",
    "admin",
    "app",
    "ops",
    "cli",
)


def module_of(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path, root: Path = ROOT) -> set[str]:
    """Every module `path` imports, relative imports resolved against its package."""
    here = module_of(path, root) if path.is_relative_to(root.parent) else path.stem
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                if node.module:
                    names.add(node.module)
                continue
            anchor = package.split(".")[: max(len(package.split(".")) - node.level + 1, 0)]
            base = ".".join([*anchor, *([node.module] if node.module else [])])
            if node.module:
                names.add(base)
            else:
                names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def layer_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "gateway" and len(parts) > 1 else None


def files() -> list[Path]:
    return sorted(ROOT.rglob("*.py"))


@pytest.mark.parametrize(
    "path",
    sorted(p for layer in PURE for p in ROOT.joinpath(layer).rglob("*.py")),
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_the_loop_core_and_media_import_no_channel_server_or_database_code(path: Path) -> None:
    bad = {
        name
        for name in imported_modules(path)
        if any(name == f or name.startswith(f + ".") for f in FORBIDDEN)
    }
    assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


def test_every_package_is_in_the_order() -> None:
    present = {p.stem if p.is_file() else p.name for p in ROOT.iterdir() if p.name[0] != "_"}
    present.discard("__pycache__")
    assert present <= set(ORDER), f"place {sorted(present - set(ORDER))} in ORDER"


def test_every_import_points_down() -> None:
    rank = {name: i for i, name in enumerate(ORDER)}
    upward = []
    for path in files():
        here = layer_of(module_of(path))
        if here is None or here not in rank:
            continue
        for name in imported_modules(path):
            there = layer_of(name)
            if there in rank and there != here and rank[there] > rank[here]:
                upward.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not upward, "\n".join(upward)


def test_at_most_eight_files_lie_directly_under_gateway() -> None:
    loose = sorted(p.name for p in ROOT.glob("*.py"))
    assert len(loose) <= 8, loose


def test_the_check_itself_catches_a_forbidden_import(tmp_path: Path) -> None:
    sample = tmp_path / "x.py"
    sample.write_text("import sqlite3\nfrom telegram.ext import Application\n")
    assert imported_modules(sample) == {"sqlite3", "telegram.ext"}


def test_the_check_resolves_relative_imports(tmp_path: Path) -> None:
    root = tmp_path / "gateway"
    (root / "skills").mkdir(parents=True)
    sample = root / "skills" / "x.py"
    sample.write_text("from ..store import Store\nfrom . import library\nfrom .files import a\n")
    assert imported_modules(sample, root) == {
        "gateway.store",
        "gateway.skills.library",
        "gateway.skills.files",
    }
