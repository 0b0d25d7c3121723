"""A platform is named only in its own package and the registry: everything else asks its spec.

Code counts, not prose: string constants (f-strings' parts included, docstrings not),
identifiers (`telegram_polling`, `LineChannel`, `TELEGRAM_USER`) and imported modules.
A name counts as a platform's when it is the platform's name or the first part of an
identifier (`skill_line` is a line of text), its label as a word ("LINE", "Telegram"),
its settings prefix ("TELEGRAM_"), its webhook route, or a prefix such as "telegram:"
(a decider) or "telegram." (a logger). What must stay elsewhere is allowed below, each
with the reason.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.channels.registry import BUILT_IN, platforms
from gateway.channels.spec import PlatformSpec

ROOT = Path(__file__).resolve().parents[2] / "gateway"
OWN = {"channels/registry.py"} | {
    module.removeprefix("gateway.").rpartition(".")[0].replace(".", "/") + "/"
    for module in BUILT_IN
}
"""The registry, and each built-in platform's package."""

ALLOWED = {
    "core/secrets.py": "a proposed skill is screened for the credentials of every service"
    " detect-secrets and its own shapes know (Discord, Slack, Stripe, Telegram, ...), whether"
    " or not that service is a platform served here: a token kind, not platform knowledge",
}
"""Files or folders (ending in /) that may name a platform, and why."""

WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def parts_of(identifier: str) -> list[str]:
    """`telegram_polling` -> telegram, polling; `LineChannel` -> line, channel."""
    return [w.lower() for chunk in identifier.split("_") for w in WORD.findall(chunk)]


def names_in_text(text: str, spec: PlatformSpec) -> bool:
    n = spec.name
    return (
        text == n
        or text.startswith((f"{n}:", f"{n}.", f"{n}_"))
        or spec.route in text
        or re.search(rf"\b{re.escape(spec.label)}\b", text) is not None
        or re.search(rf"\b{re.escape(spec.settings_prefix)}", text) is not None
    )


def names_in_identifier(identifier: str, spec: PlatformSpec) -> bool:
    parts = parts_of(identifier)
    # A lone word is a word: `line` is a line of text; `telegram` alone is an SDK import,
    # which tests/test_import_graph.py keeps inside the package.
    return len(parts) > 1 and parts[0] == spec.name


def docstrings(tree: ast.AST) -> set[int]:
    """The ids of string statements: docstrings, and attribute docstrings."""
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }


def identifiers(node: ast.AST) -> Iterator[str]:
    if isinstance(node, ast.Name):
        yield node.id
    elif isinstance(node, ast.Attribute):
        yield node.attr
    elif isinstance(node, ast.arg | ast.keyword) and node.arg:
        yield node.arg
    elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        yield node.name
    elif isinstance(node, ast.alias) and node.asname:
        yield node.asname


def modules(node: ast.AST) -> Iterator[str]:
    """The modules an import names: `gateway.channels.line.entry`, `telegram.ext`."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom) and node.module:
        yield node.module


def platform_names(source: str, specs: list[PlatformSpec]) -> list[str]:
    """Each place in `source` that names one of `specs`, as "line N: what"."""
    tree = ast.parse(source)
    prose = docstrings(tree)
    found = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) not in prose:
                found += [
                    f"line {line}: {node.value!r}" for s in specs if names_in_text(node.value, s)
                ]
            continue
        for name in identifiers(node):
            found += [f"line {line}: {name}" for s in specs if names_in_identifier(name, s)]
        for module in modules(node):
            found += [f"line {line}: {module}" for s in specs if s.name in module.split(".")]
    return found


def allowed(relative: str) -> bool:
    return any(relative == a or (a.endswith("/") and relative.startswith(a)) for a in ALLOWED)


def checked_files() -> list[Path]:
    return sorted(
        path
        for path in ROOT.rglob("*.py")
        if not any(str(path.relative_to(ROOT)).startswith(own) for own in OWN)
    )


def test_no_code_outside_a_platforms_package_and_the_registry_names_a_platform() -> None:
    specs = [p for p in platforms() if p.entry.startswith("gateway.")]
    assert {p.name for p in specs} == {"telegram", "line"}
    named = {}
    for path in checked_files():
        relative = str(path.relative_to(ROOT))
        if allowed(relative):
            continue
        found = platform_names(path.read_text(encoding="utf-8"), specs)
        if found:
            named[relative] = found
    assert not named, "\n".join(f"{p}: {', '.join(f)}" for p, f in named.items())


def test_no_console_template_names_a_platform() -> None:
    specs = [p for p in platforms() if p.entry.startswith("gateway.")]
    named = [
        f"{path.name}:{number}: {s.name}"
        for path in sorted(ROOT.joinpath("admin", "templates").glob("*.html"))
        for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        for s in specs
        if f"'{s.name}'" in text
        or f"={s.name}" in text
        or re.search(rf"\b{re.escape(s.label)}\b", text)
    ]
    assert not named, named


def test_every_allowance_is_still_needed() -> None:
    specs = [p for p in platforms() if p.entry.startswith("gateway.")]
    for allowance in ALLOWED:
        paths = [p for p in checked_files() if allowed(str(p.relative_to(ROOT)))]
        paths = [p for p in paths if str(p.relative_to(ROOT)).startswith(allowance)]
        assert any(platform_names(p.read_text(encoding="utf-8"), specs) for p in paths), allowance


@pytest.mark.parametrize(
    "source",
    [
        "if settings.telegram_polling: pass",
        'channels = ("telegram", "line")',
        'label = f"LINE user {who}"',
        'decider = "telegram:" + who',
        'route = "/webhook/line"',
        'name = "TELEGRAM_BOT_TOKEN"',
        "class LineCards: pass",
        "from gateway.channels.telegram.entry import channel",
    ],
)
def test_the_check_catches_a_platform_named_in_code(source: str) -> None:
    specs = [p for p in platforms() if p.entry.startswith("gateway.")]
    assert platform_names(source, specs), source


@pytest.mark.parametrize(
    "source",
    [
        '"""Telegram and LINE both post webhooks."""',
        "for line in text.splitlines(): print(line)",
        "_INLINE_RATIO = 0.4",
        'print("one line per check")',
    ],
)
def test_the_check_lets_prose_and_plain_words_be(source: str) -> None:
    specs = [p for p in platforms() if p.entry.startswith("gateway.")]
    assert platform_names(source, specs) == []
