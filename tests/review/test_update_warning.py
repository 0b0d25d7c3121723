"""Destructive and off-topic updates: the warning line on every card, page and API answer."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from gateway.cli import review as cli_review
from gateway.config import Settings
from gateway.core.similarity import word_overlap
from gateway.i18n import texts_for
from gateway.review.cards import OFF_TOPIC_BELOW, UpdateWarning, update_warning
from gateway.skills.library import parse_skill
from tests.cards_support import ALICE, LINE_ADMIN, fakes, flex_texts, rig_settings, running
from tests.console_support import sign_in
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import html_to_plain

WRITING = "writing-for-chat"
TWENTY = "\n".join(
    f"{n}. Step {n}: check the cable, then the router, then the port." for n in range(20)
)
EGG = (
    "# Boiling eggs\n\nThe ideal amount of time to boil an egg depends on the type of egg.\n"
    "Soft boiled: six minutes in boiling water.\nHard boiled: ten minutes, then cold water."
)


def test_an_update_that_empties_the_body_removes_all_its_lines() -> None:
    found = update_warning("troubleshooting-steps", "bundled", TWENTY, "  \n")
    assert found == UpdateWarning("empties", 20, 20, "bundled", "troubleshooting-steps")
    assert found.line() == "removes the whole body of the bundled skill troubleshooting-steps"


def test_an_update_that_removes_half_the_lines_or_more_is_flagged() -> None:
    lines = TWENTY.splitlines()
    kept = "\n".join(lines[:10])  # 10 of 20 gone: exactly half
    found = update_warning(WRITING, "bundled", TWENTY, kept)
    assert found is not None and (found.kind, found.removed, found.of) == ("removes", 10, 20)
    assert found.line() == "removes 10 of 20 lines of the bundled skill writing-for-chat"
    # A rewritten line counts as removed; blank lines and indentation do not count.
    two = "\n".join(lines[:2]) + "\n\nKeep it short."
    found = update_warning(WRITING, "custom", "\n\n" + TWENTY, two)
    assert found is not None and (found.kind, found.removed, found.of) == ("removes", 18, 20)
    assert found.line() == "removes 18 of 20 lines of the custom skill writing-for-chat"
    # One line short of half: no warning.
    assert update_warning(WRITING, "bundled", TWENTY, "\n".join(lines[:11])) is None


def test_a_small_edit_gives_no_warning() -> None:
    lines = TWENTY.splitlines()
    edited = "\n".join(["  " + lines[0], *lines[1:5], "Ask before a reset.", *lines[6:]])
    assert update_warning(WRITING, "bundled", TWENTY, edited) is None
    assert update_warning(WRITING, "bundled", TWENTY, TWENTY + "\nOne more step.") is None
    # Nothing to remove: a skill with an empty body.
    assert update_warning(WRITING, "bundled", "", TWENTY) is None


def test_an_off_topic_rewrite_is_flagged_with_what_it_removes() -> None:
    assert word_overlap(TWENTY, EGG) < OFF_TOPIC_BELOW
    found = update_warning("troubleshooting-steps", "bundled", TWENTY, EGG)
    assert found == UpdateWarning("off_topic", 20, 20, "bundled", "troubleshooting-steps")
    assert found.line() == (
        "shares almost nothing with the bundled skill troubleshooting-steps it replaces"
        " (removes 20 of 20 lines)"
    )
    # Off topic even when it keeps the line count: a same-length rewrite about eggs.
    eggs = "\n".join(f"Boil egg {n} for six minutes in salted water." for n in range(20))
    found = update_warning("troubleshooting-steps", "auto", TWENTY, eggs)
    assert found is not None and found.kind == "off_topic"
    assert found.as_json() == {
        "kind": "off_topic",
        "removed": 20,
        "of": 20,
        "source": "auto",
        "slug": "troubleshooting-steps",
    }


@pytest.mark.parametrize("language", ["ja", "zh_TW", "th"])
def test_the_warning_is_translated_with_its_counts(language: str) -> None:
    texts = texts_for(language)
    for kind in ("empties", "removes", "off_topic"):
        found = UpdateWarning(kind, 18, 20, "bundled", WRITING)  # type: ignore[arg-type]
        line = found.line(texts)
        assert line != found.line() and WRITING in line and texts("bundled") in line
        if kind != "empties":
            assert "18" in line and "20" in line


async def test_a_destructive_update_is_flagged_on_every_card_page_and_answer(
    make_settings: Callable[..., Settings],
    fake_llm: FakeOpenAI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    async with fakes() as (telegram, line):
        settings = rig_settings(make_settings, fake_llm, telegram, line)
        async with running(settings, telegram, line, fake_llm) as rig:
            live = parse_skill((settings.skills_dir / WRITING / "SKILL.md").read_text())
            of = len([x for x in live.body.splitlines() if x.strip()])
            pid = await rig.propose(
                WRITING, kind="update", target=WRITING, content="Keep answers to one line."
            )
            expected = f"removes {of} of {of} lines of the bundled skill {WRITING}"

            (card,) = rig.cards_in(ALICE)
            assert f"⚠️ Destructive update: {expected}" in html_to_plain(card["text"])
            (bubble,) = rig.line_cards(LINE_ADMIN)
            assert expected in flex_texts(bubble)

            status, detail = await rig.api("GET", f"/proposals/{pid}")
            assert status == 200
            assert detail["warning"] == {
                "kind": "removes",
                "removed": of,
                "of": of,
                "source": "bundled",
                "slug": WRITING,
            }

            await sign_in(rig.client)
            resp = await rig.client.get(f"/admin/proposals/{pid}")
            page = await resp.text()
            assert resp.status == 200 and 'id="destructive-update"' in page
            assert f"This update {expected}." in page

            # Decided, the card keeps it: measured against the text the approval replaced.
            status, _ = await rig.api("POST", f"/proposals/{pid}/approve")
            assert status == 200
            await rig.idle()
            (card,) = rig.cards_in(ALICE)
            assert "✅ Approved" in card["text"] and expected in html_to_plain(card["text"])
            status, detail = await rig.api("GET", f"/proposals/{pid}")
            assert detail["status"] == "approved" and detail["warning"]["removed"] == of
            status, _ = await rig.api("POST", f"/proposals/{pid}/rollback", {"reason": "too much"})
            assert status == 200

            # A small edit of the same skill carries none of it.
            edited = live.body + "\nNever paste secrets into an answer."
            small = await rig.propose(WRITING, kind="update", target=WRITING, content=edited)
            status, detail = await rig.api("GET", f"/proposals/{small}")
            assert status == 200 and detail["warning"] is None
            cards = [c for c in rig.cards_in(ALICE) if f"Proposal #{small}:" in c["text"]]
            assert cards and "Destructive" not in cards[0]["text"]
            created = await rig.propose("chat-brevity")
            assert (await rig.api("GET", f"/proposals/{created}"))[1]["warning"] is None

    capsys.readouterr()

    def run(coro: object) -> int:
        return int(asyncio.run(coro))  # type: ignore[arg-type]

    assert await asyncio.to_thread(run, cli_review.show_proposal(settings, pid)) == 0
    shown = capsys.readouterr().out
    assert f"⚠️ Destructive update: {expected}" in shown
    assert await asyncio.to_thread(run, cli_review.show_proposal(settings, small)) == 0
    assert "Destructive" not in capsys.readouterr().out
