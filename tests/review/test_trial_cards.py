"""The trial on every card and page: Telegram, LINE, the console (each pair side by side),
`skillgate proposals show` and the API say what it measured in one or two lines, or that it
was not measured and why; the proposal waits for a person either way."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from gateway.cli import review as cli_review
from gateway.config import Settings
from gateway.i18n import texts_for
from gateway.review.trials import ArmCounts, Reason, SideCounts, TrialSummary, trial_lines
from tests.cards_support import ALICE, LINE_ADMIN, Rig, fakes, flex_texts, rig_settings, running
from tests.console_support import sign_in
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import html_to_plain

NAME = "chat-brevity"
GAIN = (
    "🧪 Trial: measured gain — Tried on 1 answer users disliked: better with it 1, without it 0."
    " No answer users liked was tried."
)


def answering(body: dict[str, Any]) -> str:
    """Better where the prompt offers the proposal, plain otherwise."""
    return "Short and BETTER." if f"- {NAME}:" in str(body["messages"][0]["content"]) else "Plain."


def run(coro: object) -> int:
    return int(asyncio.run(coro))  # type: ignore[arg-type]


async def test_the_trial_is_on_every_card_and_page(
    make_settings: Callable[..., Settings],
    fake_llm: FakeOpenAI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake_llm.default = answering
    async with fakes() as (telegram, line):
        settings = rig_settings(make_settings, fake_llm, telegram, line, trial_turns_per_side=3)
        async with running(settings, telegram, line, fake_llm) as rig:
            pid = await rig.propose(NAME)
            (card,) = rig.cards_in(ALICE)
            assert GAIN in html_to_plain(card["text"])
            (bubble,) = rig.line_cards(LINE_ADMIN)
            assert "measured gain — Tried on 1 answer users disliked" in flex_texts(bubble)

            status, detail = await rig.api("GET", f"/proposals/{pid}")
            assert status == 200 and detail["status"] == "pending"
            assert detail["trial"]["verdict"] == "measured_gain"
            assert len(detail["trial"]["pairs"]) == 2

            await sign_in(rig.client)
            resp = await rig.client.get(f"/admin/proposals/{pid}")
            page = await resp.text()
            assert resp.status == 200 and 'id="trial" data-verdict="measured_gain"' in page
            assert page.count('class="trial-pair"') == 2
            assert "Short and BETTER." in page and "Here is a long, formal reminder" in page
    capsys.readouterr()
    assert await asyncio.to_thread(run, cli_review.show_proposal(settings, pid)) == 0
    assert GAIN in capsys.readouterr().out


async def test_a_trial_not_measured_says_why_on_the_cards_and_the_proposal_waits(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.default = answering
    fake_llm.trial_judge = lambda body: "Answer 1 seems fine."
    async with fakes() as (telegram, line):
        settings = rig_settings(make_settings, fake_llm, telegram, line, trial_turns_per_side=3)
        async with running(settings, telegram, line, fake_llm) as rig:
            pid = await rig.propose(NAME)
            (card,) = rig.cards_in(ALICE)
            text = html_to_plain(card["text"])
            unable = "not measured: the judge fake-model cannot compare answers (0/16 right"
            assert f"🧪 Trial: {unable}" in text
            assert "Approve" in str(card["reply_markup"])  # a person decides, as always
            (bubble,) = rig.line_cards(LINE_ADMIN)
            assert unable in flex_texts(bubble)
            status, detail = await rig.api("GET", f"/proposals/{pid}")
            assert status == 200 and detail["status"] == "pending"
            assert detail["trial"]["verdict"] == "not_measured"
            # The admins are told once why every trial will say so, and what to set.
            (notice,) = trial_notices(rig, ALICE)
            assert "fake-model cannot compare two answers well enough to try proposals" in notice
            assert "0/16 right" in notice and "LLM_SAME_CLAIM_MODEL" in notice
            await rig.propose(
                "cite-sources",
                description="Name sources: use when a user asks where a fact comes from.",
                content="# Sources\n\nName a source for each fact.",
            )
            assert len(trial_notices(rig, ALICE)) == 1


def trial_notices(rig: Rig, chat_id: int) -> list[str]:
    return [
        str(m["text"])
        for (chat, _), m in sorted(rig.telegram.messages.items())
        if chat == chat_id and "well enough to try proposals" in str(m.get("text", ""))
    ]


async def test_a_japanese_admin_reads_why_a_trial_was_not_measured_in_japanese(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.default = answering
    fake_llm.trial_judge = lambda body: "Answer 1 seems fine."
    async with fakes() as (telegram, line):
        settings = rig_settings(make_settings, fake_llm, telegram, line, trial_turns_per_side=3)
        async with running(settings, telegram, line, fake_llm) as rig:
            await rig.parts.store.user_language_seen("telegram", str(ALICE), "ja", ok=True)
            pid = await rig.propose(NAME)
            (card,) = [
                m
                for (chat, _), m in sorted(telegram.messages.items())
                if chat == ALICE and str(m.get("text", "")).startswith(f"<b>提案 #{pid}")
            ]
            text = html_to_plain(card["text"])
            assert (
                "未測定：判定モデル fake-model は回答を比較できません（較正で 0/16 正解）" in text  # noqa: RUF001
            )
            (notice,) = trial_notices_ja(rig, ALICE)
            assert "0/16" in notice and "LLM_SAME_CLAIM_MODEL" in notice


def trial_notices_ja(rig: Rig, chat_id: int) -> list[str]:
    return [
        str(m["text"])
        for (chat, _), m in sorted(rig.telegram.messages.items())
        if chat == chat_id and "提案を試す" in str(m.get("text", ""))
    ]


@pytest.mark.parametrize("language", ["ja", "zh_TW", "th"])
def test_the_trial_lines_are_translated_with_their_counts(language: str) -> None:
    counts = SideCounts(tried=6, with_it=ArmCounts(better=4, same=2), control=ArmCounts(better=1))
    liked = SideCounts(tried=5, with_it=ArmCounts(same=5), control=ArmCounts(worse=1, same=4))
    summary = TrialSummary(verdict="measured_gain", fixes=counts, guards=liked, liked=liked)
    english = trial_lines(summary)
    assert english == [
        "measured gain",
        "Tried on 6 answers users disliked: better with it 4, without it 1."
        " On 5 answers users liked: worse with it 0, without it 1.",
    ]
    translated = trial_lines(summary, texts_for(language))
    assert len(translated) == 2 and translated != english
    for figure in ("6", "4", "1", "5", "0"):
        assert figure in translated[1]
    why = Reason(code="call_budget", values={"calls": "40"})
    unmeasured = TrialSummary(verdict="not_measured", reason=why.text(), why=why)
    (english_line,) = trial_lines(unmeasured)
    assert english_line == (
        "not measured: stopped at its budget of 40 model calls (SKILLGATE_TRIAL_CALLS)"
    )
    (line,) = trial_lines(unmeasured, texts_for(language))
    assert "40" in line and "SKILLGATE_TRIAL_CALLS" in line and "stopped at" not in line
    # A trial stored before reasons were kept for translation still shows its English one.
    old = TrialSummary(verdict="not_measured", reason="no rated answers to try it on")
    (line,) = trial_lines(old, texts_for(language))
    assert "no rated answers to try it on" in line and line != trial_lines(old)[0]
