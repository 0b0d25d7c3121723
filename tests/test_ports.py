"""A store method is declared once, in the port of the component that calls it.

Ports are `typing.Protocol`s; one that needs what another declares inherits it instead of
declaring the method again, so a signature changed in the store is changed in one port.
"""

from __future__ import annotations

import ast
import inspect
from collections import defaultdict
from pathlib import Path

from gateway.store.base import Store

ROOT = Path(__file__).resolve().parent.parent / "gateway"
LIFECYCLE = {"open", "close"}
"""Methods every client has (the model's, speech-to-text's), not only the store."""


def store_methods() -> set[str]:
    public = {name for name, value in inspect.getmembers(Store) if callable(value)}
    return {name for name in public if not name.startswith("_")} - LIFECYCLE


def protocol_declarations(root: Path = ROOT) -> dict[str, list[str]]:
    """Every method declared in a Protocol class outside the store, with where; a store port
    is one whose methods are all the store's (a platform's `ReviewReplies.reviewer_name` is
    another thing of the same name)."""
    methods = store_methods()
    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted(root.rglob("*.py")):
        if path.parent.name == "store":
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if not isinstance(node, ast.ClassDef):
                continue
            if not any(ast.unparse(base) == "Protocol" for base in node.bases):
                continue
            names = [
                item.name
                for item in node.body
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
            ]
            if not set(names) <= methods:
                continue
            for name in names:
                found[name].append(f"{path.relative_to(root)}:{node.name}")
    return found


def test_every_store_method_is_declared_in_one_port_at_most() -> None:
    declared = protocol_declarations()
    again = {name: where for name, where in declared.items() if len(where) > 1}
    assert not again, "\n".join(f"{name}: {', '.join(where)}" for name, where in again.items())


def test_the_check_sees_a_method_declared_twice(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(
        "from typing import Protocol\n"
        "class One(Protocol):\n    async def get_meta(self, key: str) -> str | None: ...\n"
        "class Two(Protocol):\n    async def get_meta(self, key: str) -> str | None: ...\n"
    )
    assert protocol_declarations(tmp_path)["get_meta"] == ["a.py:One", "a.py:Two"]
