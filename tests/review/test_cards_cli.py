"""Review in the terminal: `skillgate proposals ...` and `skillgate skills list`, cards included."""

from __future__ import annotations

import asyncio
import getpass
import time
from collections.abc import Callable

import pytest

from gateway.channels.line.settings import LineSettings
from gateway.channels.telegram.settings import TelegramSettings
from gateway.cli import build_parser
from gateway.cli import review as cli_review
from gateway.config import Settings
from tests.cards_support import ALICE, BOB, LINE_ADMIN, fakes, rig_settings, running
from tests.fakes.openai_server import FakeOpenAI
from tests.serve_process import skillgate
from tests.synthesis_support import seed_session


def environment(settings: Settings) -> dict[str, str]:
    """The variables a separate `skillgate` process needs to find the same data and bots."""
    telegram, line = settings.section(TelegramSettings), settings.section(LineSettings)
    assert telegram.telegram_bot_token and line.line_channel_secret
    assert line.line_channel_access_token
    return {
        "SKILLGATE_DATA_DIR": str(settings.data_dir),
        "TELEGRAM_BOT_TOKEN": telegram.telegram_bot_token.get_secret_value(),
        "TELEGRAM_API_BASE_URL": telegram.telegram_api_base_url,
        "TELEGRAM_ADMIN_IDS": ",".join(str(i) for i in telegram.telegram_admin_ids),
        "LINE_CHANNEL_SECRET": line.line_channel_secret.get_secret_value(),
        "LINE_CHANNEL_ACCESS_TOKEN": line.line_channel_access_token.get_secret_value(),
        "LINE_API_BASE_URL": line.line_api_base_url,
        "LINE_ADMIN_IDS": ",".join(line.line_admin_ids),
    }


async def test_a_terminal_reject_updates_every_chat_card_and_the_first_decision_wins(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with fakes() as (telegram, line):
        settings = rig_settings(make_settings, fake_llm, telegram, line)
        async with running(settings, telegram, line, fake_llm) as rig:
            pid = await rig.propose()
        # The server is stopped: the command itself must reach the chats.
        code, out, err = await skillgate(
            "proposals", "reject", str(pid), "--reason", "too terse", env=environment(settings)
        )
        assert code == 0, err
        assert (
            out.strip()
            == f"rejected #{pid} (chat-brevity) (too terse); it will not be proposed again"
        )
        who = f"{getpass.getuser()} (terminal)"
        edits = telegram.calls_of("editMessageText")
        assert sorted(e.params["chat_id"] for e in edits) == [ALICE, BOB]
        for admin in (ALICE, BOB):
            (card,) = rig.cards_in(admin)
            assert "reply_markup" not in card
            assert f"❌ Rejected by {who}: too terse" in card["text"]
        assert line.delivered_texts(LINE_ADMIN)[-1].endswith(f"❌ Rejected by {who}: too terse")
        assert telegram.token not in err

        # A second decision, here in-process: it changes nothing and says who decided.
        code = await asyncio.to_thread(
            asyncio.run, cli_review.decide(settings, pid, "cli:bob", reject=False, reason=None)
        )
        assert code == 1
        assert len(telegram.calls_of("editMessageText")) == 2


async def test_list_show_and_skills_in_the_terminal(
    make_settings: Callable[..., Settings],
    fake_llm: FakeOpenAI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    async with fakes() as (telegram, line):
        settings = rig_settings(make_settings, fake_llm, telegram, line)
        async with running(settings, telegram, line, fake_llm) as rig:
            pid = await rig.propose()
            for rating in (1, -1):
                await seed_session(
                    rig.parts.store, loaded=["writing-for-chat"], rating=rating, at=time.time()
                )
    capsys.readouterr()

    def run(coro: object) -> int:
        return int(asyncio.run(coro))  # type: ignore[arg-type]

    assert await asyncio.to_thread(run, cli_review.list_proposals(settings, "pending", 50)) == 0
    listed = capsys.readouterr().out
    assert listed.startswith(f"#{pid}") and "pending" in listed and "chat-brevity" in listed

    assert await asyncio.to_thread(run, cli_review.show_proposal(settings, pid)) == 0
    shown = capsys.readouterr().out
    assert f"Proposal #{pid}: new skill chat-brevity" in shown
    assert "Evidence: 1 session, 1 👎 with a comment" in shown
    assert "+++ chat-brevity/SKILL.md.proposed" in shown and "+# Brevity" in shown

    assert await asyncio.to_thread(run, cli_review.show_proposal(settings, pid + 5)) == 1
    assert f"no proposal #{pid + 5}" in capsys.readouterr().err

    assert await asyncio.to_thread(run, cli_review.list_skills(settings)) == 0
    assert (
        "• writing-for-chat — bundled, enabled, live; 2 uses, 👍 1 👎 1, rate 50% ("
        in capsys.readouterr().out
    )


def test_the_review_commands_parse_as_documented() -> None:
    parser = build_parser()
    args = parser.parse_args(["proposals", "reject", "12", "--reason", "dup"])
    assert (args.action, args.id, args.reason) == ("reject", 12, "dup")
    assert parser.parse_args(["proposals", "list", "--status", "rejected"]).status == "rejected"
    assert parser.parse_args(["skills", "list"]).action == "list"
    with pytest.raises(SystemExit):
        parser.parse_args(["proposals", "approve", "-3"])
