"""README is the front door and docs/ the reference: every command, flag, chat command and
setting is documented somewhere, every page is linked from README, no link is stale, and
README's test command is the one CI runs."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from gateway.cli import build_parser
from gateway.conversation.dispatch import COMMANDS
from gateway.conversation.review import ADMIN_COMMANDS

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
COMMANDS_PAGE = ROOT / "docs" / "COMMANDS.md"
LINK = re.compile(r"\]\(([^)\s]+)\)")


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return {name: sub for a in actions for name, sub in a.choices.items()}


def commands() -> list[tuple[str, argparse.ArgumentParser]]:
    """Every `skillgate ...` command, its actions included (`skillgate proposals approve`)."""
    found = []
    for name, sub in subparsers(build_parser()).items():
        found.append((f"skillgate {name}", sub))
        found += [(f"skillgate {name} {a}", s) for a, s in subparsers(sub).items()]
    return found


def slug(title: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[^\w\- ]", "", title.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
    return {slug(m) for m in re.findall(r"^#{1,6} (.+)$", text, re.M)}


@pytest.mark.parametrize("command", [c for c, _ in commands()])
def test_every_command_is_in_the_commands_reference(command: str) -> None:
    assert command in COMMANDS_PAGE.read_text(), f"docs/COMMANDS.md lacks `{command}`"


def test_every_flag_of_every_command_is_in_the_commands_reference() -> None:
    page = COMMANDS_PAGE.read_text()
    missing = []
    for command, parser in commands():
        for action in parser._actions:
            for flag in action.option_strings:
                if flag.startswith("--") and flag != "--help" and flag not in page:
                    missing.append(f"{command} {flag}")
    assert not missing, f"docs/COMMANDS.md lacks {missing}"


@pytest.mark.parametrize("name", [n for n, _ in (*COMMANDS, *ADMIN_COMMANDS)])
def test_every_chat_command_is_in_readme_and_in_the_chat_pages(name: str) -> None:
    assert f"/{name}" in README.read_text()
    reference = "".join(p.read_text() for p in DOCS)
    assert f"/{name}" in reference


def test_readme_is_a_front_door_that_links_every_docs_page() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 330
    linked = set(LINK.findall(text))
    for page in DOCS:
        if page.name == "LEARNING-REPORT.md":
            continue  # written by the evaluation, linked from docs/LEARNING.md
        assert f"docs/{page.name}" in linked, f"README does not link docs/{page.name}"
    # The places other parts of the project write into.
    for title in (
        "Quick start",
        "What the on-board model cannot do",
        "Connecting Telegram and LINE",
        "How review works",
        "The trial line on the card",
        "Doctor",
        "Everyday commands",
        "Scheduled tasks",
        "Voice and pictures",
        "Skill import and export",
    ):
        assert re.search(rf"^#+ {re.escape(title)}$", text, re.M), title


@pytest.mark.parametrize("page", [README, *DOCS], ids=lambda p: p.name)
def test_no_link_is_stale(page: Path) -> None:
    """Every relative link names a file that exists, and a heading there when it has #."""
    for target in LINK.findall(page.read_text()):
        if re.match(r"^[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        assert resolved.exists(), f"{page.name}: {target}"
        if anchor and resolved.suffix == ".md":
            assert anchor in anchors(resolved), f"{page.name}: {target}"


def test_readme_test_command_is_what_ci_runs() -> None:
    text = README.read_text()
    quick = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert re.findall(r"^\./scripts/(\w+)", quick, re.M) == ["serve", "test"]
    assert "\nbash scripts/test " in (ROOT / ".ci" / "run").read_text()
