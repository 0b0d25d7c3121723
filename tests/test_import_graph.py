"""No import circles in gateway/: every import counts, TYPE_CHECKING and function-level ones too.

A circle closed through a TYPE_CHECKING import still ties its modules together: none can be
read, tested or moved without the others. The platform SDKs are imported only in their own
package, so everything else reads the same whatever platforms are configured.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "gateway"
SDKS = {"telegram": "channels/telegram", "linebot": "channels/line"}


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, root: Path, known: set[str]) -> set[str]:
    """The package's own modules that `path` imports anywhere in its text."""
    here = module_name(path, root)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                # `from gateway.a import b` imports gateway.a.b when that is a module.
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in known else base)
    return {name for name in found if name in known and name != here}


def import_graph(root: Path) -> dict[str, set[str]]:
    paths = sorted(root.rglob("*.py"))
    known = {module_name(p, root) for p in paths}
    return {module_name(p, root): imports_of(p, root, known) for p in paths}


def circles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_module_in_gateway_is_part_of_an_import_circle() -> None:
    assert circles(import_graph(ROOT)) == []


@pytest.mark.parametrize("sdk", sorted(SDKS))
def test_a_platform_sdk_is_imported_only_in_its_own_package(sdk: str) -> None:
    home = ROOT / SDKS[sdk]
    importers = []
    for path in sorted(ROOT.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and node.level == 0
                else []
            )
            if any(n == sdk or n.startswith(sdk + ".") for n in names):
                importers.append(path)
    outside = sorted(str(p.relative_to(ROOT)) for p in importers if home not in p.parents)
    assert outside == []


def test_the_check_finds_a_circle_closed_by_a_type_checking_import(tmp_path: Path) -> None:
    package = tmp_path / "gateway"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "a.py").write_text("from gateway.sub import b\n")
    (package / "sub" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..c import C\n"
    )
    (package / "c.py").write_text("def f():\n    import gateway.a\n")
    graph = import_graph(package)
    assert graph["gateway.a"] == {"gateway.sub.b"}
    assert circles(graph) == [["gateway.a", "gateway.c", "gateway.sub.b"]]
