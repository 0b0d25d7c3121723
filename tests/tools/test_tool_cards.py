"""Review cards list each tool a proposed skill names, with its policy and what to weigh."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from gateway.channels.line.cards import CardBubbles
from gateway.channels.telegram.cards import card_part
from gateway.config import Settings
from gateway.core.tools import ToolInfo
from gateway.review.buttons import CardSigner
from gateway.review.cards import Card, Evidence, change_diff
from gateway.review.proposals import Proposal
from tests.console_support import sign_in
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import html_to_plain, make_callback_update, make_text_update
from tests.telegram_harness import ADMIN, telegram_gateway
from tests.tools.http_server import ToyServer
from tests.tools.support import tools_file

ADMIN_ID = 4242
TOOLS = (
    ("time__get_current_time", ToolInfo("time__get_current_time", "auto", True)),
    ("git__git_add", ToolInfo("git__git_add", "confirm", False)),
    ("git__git_reset", ToolInfo("git__git_reset", "admin", False)),
    ("gone__tool", None),
)
LISTED = (
    "time__get_current_time (auto), git__git_add (confirm), git__git_reset (admin), gone__tool (—)"
)
WARNED = (
    "git__git_add asks the user first, git__git_add changes things, git__git_reset is for"
    " admins only, git__git_reset changes things, gone__tool is not available now"
)


def proposal(**fields: Any) -> Proposal:
    values: dict[str, Any] = {
        "id": 3,
        "kind": "create",
        "name": "tidy-notes",
        "description": "Keep the notes repository tidy.",
        "content": "Stage and commit notes when asked.",
        "content_hash": "h",
        "generated_at": 1_700_000_000.0,
        "allowed_tools": [name for name, _ in TOOLS],
    }
    values.update(fields)
    return Proposal.model_validate(values)


def test_telegram_line_and_terminal_cards_list_the_tools_with_their_policies() -> None:
    card = Card(proposal(), Evidence(1), "+Stage and commit notes when asked.", tools=TOOLS)
    telegram = card_part(card).plain
    line = json.dumps(CardBubbles(CardSigner("s")).message(card).to_dict(), ensure_ascii=False)
    terminal = card.plain()
    for text in (telegram, line, terminal):
        assert LISTED in text
        assert WARNED in text
    quiet = Card(proposal(allowed_tools=["time__get_current_time"]), Evidence(1), "", TOOLS[:1])
    assert "Check before approving" not in quiet.plain()  # read-only and auto: nothing to weigh


class Review:
    """The review side of a card: the live skill the update changes."""

    def __init__(self, live: Any) -> None:
        self._live = live

    async def live(self, slug: str) -> Any:
        return self._live

    async def diff(self, p: Proposal) -> str:
        return ""

    def tool_directory(self) -> dict[str, ToolInfo]:
        return {}


async def test_an_update_that_adds_a_tool_says_so_in_its_diff() -> None:
    from gateway.skills.library import parse_skill
    from gateway.skills.live import LiveSkill

    text = "---\nname: tidy-notes\ndescription: Keep the notes repository tidy.\n---\n\nBody.\n"
    live = LiveSkill(skill=parse_skill(text), text=text, source="generated")
    update = proposal(
        kind="update", target="tidy-notes", content="Body.", allowed_tools=["git__git_add"]
    )
    diff = await change_diff(update, Review(live), None)  # type: ignore[arg-type]
    assert "+allowed-tools: git__git_add" in diff


@pytest.fixture
async def toy() -> AsyncIterator[ToyServer]:
    async with ToyServer().running() as server:
        yield server


async def test_an_admins_telegram_card_shows_the_live_policies_of_a_proposals_tools(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, tmp_path: Path, toy: ToyServer
) -> None:
    path = tools_file(tmp_path, servers={"toy": {"url": toy.url, "trusted": True}})
    fake_llm.reply("Noted.")
    draft = {
        "kind": "create",
        "target": None,
        "name": "note-taker",
        "description": "Write notes down when asked",
        "content": "Use the note tool for every note.",
        "based_on": [1],
        "rationale": "users ask for notes",
        "allowed_tools": ["toy__note", "toy__echo"],
    }
    fake_llm.reply(json.dumps({"proposals": [draft]}))
    async with telegram_gateway(
        make_settings,
        fake_llm,
        tools_file=path,
        session_idle_minutes=0,
        telegram_admin_ids=[ADMIN_ID],
    ) as gw:
        await gw.deliver(make_text_update(1, "take a note"))
        await gw.deliver(make_callback_update(2, "rate:2:-1"))
        assert (await gw.client.post("/admin/api/synthesize", headers=ADMIN)).status == 200
        await gw.idle()
        [card] = [html_to_plain(t) for t in gw.fake.sent_texts(ADMIN_ID) if "note-taker" in t]
        await sign_in(gw.client, "admin-secret-token")
        console = await (await gw.client.get("/admin/proposals/1")).text()
    assert "Tools: toy__note (confirm), toy__echo (auto)" in card
    assert "toy__note (confirm)" in console and "⚠️ toy__note changes things" in console
    assert "toy__note asks the user first, toy__note changes things" in card
