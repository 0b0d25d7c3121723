"""A platform package imports one module of the gateway: `gateway.channels.api`.

Telegram, LINE and the tests' Loopchat are held to it: everything they use of the gateway
is in that module's surface, so a platform can be written from it (and
docs/ADDING_A_CHANNEL.md) alone. Every import counts, TYPE_CHECKING and function-level ones
too; Loopchat's rig (its driver, its fake API, its tests) is test code, not the platform.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.channels import api

REPO = Path(__file__).resolve().parents[2]
PACKAGES = {
    "gateway.channels.telegram": REPO / "gateway" / "channels" / "telegram",
    "gateway.channels.line": REPO / "gateway" / "channels" / "line",
    "tests.channels.loopchat": REPO / "tests" / "channels" / "loopchat",
}
RIG = {"conftest.py", "driver.py", "fake.py"}
"""Loopchat's test rig: it builds the app, as a test does, and fakes the platform's API."""


def platform_modules(package: str) -> list[Path]:
    return sorted(
        path
        for path in PACKAGES[package].glob("*.py")
        if path.name not in RIG and not path.name.startswith("test_")
    )


def gateway_imports(path: Path) -> set[str]:
    """Every module of the gateway `path` imports (the relative imports of a package
    resolve within it: none of these packages uses them)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return {name for name in found if name == "gateway" or name.startswith("gateway.")}


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_a_platform_imports_nothing_of_the_gateway_but_its_api(package: str) -> None:
    outside = {
        f"{path.name}: {name}"
        for path in platform_modules(package)
        for name in gateway_imports(path)
        if name not in ("gateway.channels.api", package) and not name.startswith(f"{package}.")
    }
    assert not outside, sorted(outside)


def test_the_check_sees_type_checking_and_function_level_imports(tmp_path: Path) -> None:
    sample = tmp_path / "x.py"
    sample.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from gateway.config import Settings\n"
        "def f():\n    import gateway.store\n"
        "from gateway.channels.api import Channel\n"
    )
    assert gateway_imports(sample) == {"gateway.config", "gateway.store", "gateway.channels.api"}


def test_every_name_of_the_api_is_its_home_modules_own() -> None:
    assert sorted(api.__all__) == sorted(n for names in api.HOMES.values() for n in names)
    for module, names in api.HOMES.items():
        home = importlib.import_module(module)
        for name in names:
            assert getattr(api, name) is getattr(home, name), name


def test_the_type_checking_imports_of_the_api_are_its_homes() -> None:
    """What mypy sees is what the module hands out."""
    tree = ast.parse(Path(api.__file__).read_text())
    [block] = [n for n in tree.body if isinstance(n, ast.If)]
    seen = {
        (node.module, a.name)
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for a in node.names
    }
    assert seen == {(m, n) for m, names in api.HOMES.items() for n in names}


def test_a_name_not_in_the_api_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Parts'"):
        _ = api.Parts  # type: ignore[attr-defined]


def test_importing_the_api_and_a_spec_loads_no_server_sdk_or_conversation() -> None:
    """The CLI reads every spec to build its parser: a spec, through the api, stays cheap."""
    probe = (
        "import sys\n"
        "import gateway.channels.api, gateway.channels.telegram.spec, gateway.channels.line.spec\n"
        "heavy = ('aiohttp', 'telegram', 'linebot', 'gateway.conversation', 'gateway.store')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout
