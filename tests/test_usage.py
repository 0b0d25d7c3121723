"""Usage and cost: tokens per answer (unknown kept apart from zero), sums, prices, and where
admins read them: the console page, the admin API, /usage in both chats and the terminal."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from gateway.config import Settings, load_settings
from gateway.core.records import AnswerUsage, RunUsage, Trace
from gateway.errors import ConfigError
from gateway.store import SqliteStore, Store
from gateway.usage import (
    MediaPrices,
    UsageReport,
    build_report,
    parse_prices,
    usage_report,
    usage_text,
)
from tests.cards_support import ALICE, LINE_ADMIN, MALLORY, Rig, fakes, rig_settings, running
from tests.console_support import day_at, sign_in
from tests.fakes.line_api import text_event
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import make_text_update
from tests.serve_process import skillgate
from tests.store_support import add_message, current_session
from tests.telegram_harness import ADMIN, telegram_gateway

PRICES = {"big": (2.0, 8.0), "small": (0.1, 0.4)}


def no_usage_body(text: str) -> dict[str, Any]:
    """A completion as some servers send it: no `usage` at all."""
    return {
        "id": "chatcmpl-x",
        "object": "chat.completion",
        "model": "fake-model",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
    }


def test_prices_are_model_equals_input_slash_output_per_million_tokens() -> None:
    assert parse_prices("gpt-4o-mini=0.15/0.60, *=1/2") == {
        "gpt-4o-mini": (0.15, 0.6),
        "*": (1.0, 2.0),
    }
    assert parse_prices("") == {}
    for bad in ("gpt=0.15", "gpt=a/b", "=1/2", "gpt=-1/2", "a=1/2,a=2/3"):
        with pytest.raises(ValueError):
            parse_prices(bad)
    with pytest.raises(ConfigError, match="LLM_PRICES"):
        load_settings(_env_file=None, LLM_PRICES="gpt=1")
    with pytest.raises(ConfigError, match="needs LLM_PRICES"):
        load_settings(_env_file=None, SKILLGATE_DAILY_COST_BUDGET="5")
    budget = {"SKILLGATE_DAILY_COST_BUDGET": "5", "LLM_MODEL": "big", "LLM_PRICES": "small=1/1"}
    with pytest.raises(ConfigError, match="no price for LLM_MODEL"):
        load_settings(_env_file=None, **budget)
    assert load_settings(_env_file=None, **{**budget, "LLM_PRICES": "small=1/1,*=2/2"})


def test_the_report_sums_per_day_user_chat_channel_and_model_and_prices_them() -> None:
    day1, day2 = 1_777_000_000.0, 1_777_000_000.0 + 86400
    answers = [
        AnswerUsage(at=day1, channel="telegram", chat_id="1", user_id="1", model="big",
                    prompt_tokens=1_000_000, completion_tokens=500_000),
        AnswerUsage(at=day2, channel="line", chat_id="G", user_id="U1", model="small",
                    prompt_tokens=2_000_000, completion_tokens=0),
        AnswerUsage(at=day2, channel="line", chat_id="G", user_id="U2", model="small",
                    prompt_tokens=0, completion_tokens=0, tokens_known=False),
        AnswerUsage(at=day2, channel="line", chat_id="G", user_id="U2", model="other",
                    prompt_tokens=10, completion_tokens=10),
    ]  # fmt: skip
    runs = [RunUsage(at=day2, model="big", prompt_tokens=500_000, completion_tokens=0)]
    start = date.fromtimestamp(day1)
    report = build_report(answers, runs, PRICES, start, date.fromordinal(start.toordinal() + 1))
    assert report.total.answers == 4 and report.total.unknown == 1
    assert report.total.tokens == 3_500_020 and report.total.unpriced_tokens == 20
    assert report.total.cost == pytest.approx(2.0 + 4.0 + 0.2)
    assert report.synthesis.cost == pytest.approx(1.0)
    assert report.synthesis_share == pytest.approx(500_000 / 4_000_020)
    assert {k: t.answers for k, t in report.channels.items()} == {"telegram": 1, "line": 3}
    assert {k: t.tokens for k, t in report.chats.items()} == {
        "telegram:1": 1_500_000,
        "line:G": 2_000_020,
    }
    assert [k for k, _ in report.top(report.users)] == ["line:U1", "telegram:1", "line:U2"]
    assert [(d, a.answers, s.tokens) for d, a, s in report.day_list()] == [
        (start.isoformat(), 1, 0),
        (date.fromordinal(start.toordinal() + 1).isoformat(), 3, 500_000),
    ]
    text = usage_text(report)
    assert (
        "Answers: 4 · 3,500,020 tokens (3,000,010 in, 500,010 out), 1 without token counts" in text
    )
    assert "Synthesis share of tokens: 12%" in text and "Total cost: 7.20" in text


async def test_each_answer_is_counted_for_its_user_and_chat_with_unknown_tokens_apart(
    any_store: Store,
) -> None:
    now = time.time()
    session = await current_session(any_store, "line", "G1", "U1", now, 600)
    await add_message(any_store, session.id, "user", "q", now=now, user_id="U1")
    known = Trace(prompt_tokens=30, completion_tokens=5, model="small")
    await add_message(any_store, session.id, "assistant", "a", trace=known, now=now, user_id="U1")
    unknown = Trace(model="small", tokens_known=False)
    await add_message(any_store, session.id, "assistant", "b", trace=unknown, now=now, user_id="U2")
    run = await any_store.start_run("schedule", "big", now)
    assert run
    rows = await any_store.answer_usage(now - 1, now + 1)
    assert [(r.user_id, r.chat_id, r.prompt_tokens, r.tokens_known) for r in rows] == [
        ("U1", "G1", 30, True),
        ("U2", "G1", 0, False),
    ]
    assert await any_store.answer_usage(now + 1, now + 2) == []
    assert [r.model for r in await any_store.run_usage(now - 1, now + 1)] == ["big"]
    report = await usage_report(any_store, PRICES, 1, now)
    assert report.users["line:U2"].unknown == 1 and report.users["line:U1"].tokens == 35


async def test_the_usage_page_and_api_show_the_chart_top_users_and_unknown_tokens(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.reply("counted")
    fake_llm.raw(no_usage_body("not counted"))
    prices = {"llm_prices": "fake-model=1/2"}
    async with telegram_gateway(make_settings, fake_llm, **prices) as gw:
        await gw.deliver(make_text_update(1, "first"))
        await gw.deliver(make_text_update(2, "second", chat_id=2002, user_id=2002))
        old = await current_session(gw.parts.store, "telegram", "3003", "3003", day_at(3), 60)
        trace = Trace(prompt_tokens=4000, completion_tokens=1000, model="fake-model")
        await add_message(
            gw.parts.store, old.id, "assistant", "old", trace=trace, now=day_at(3), user_id="3003"
        )

        resp = await gw.client.get("/admin/api/usage?days=7", headers=ADMIN)
        data = await resp.json()
        assert data["answers"]["answers"] == 3
        assert data["answers"]["unknown_tokens_answers"] == 1
        users = {u["user"]: u for u in data["users"]}
        assert users["telegram:2002"]["unknown_tokens_answers"] == 1
        assert users["telegram:2002"]["tokens"] == 0
        assert users["telegram:1001"]["tokens"] > 0
        assert users["telegram:3003"]["cost"] == pytest.approx((4000 * 1 + 1000 * 2) / 1e6)
        assert len(data["days"]) == 7 and data["priced"] is True
        assert (await gw.client.get("/admin/api/usage?days=0", headers=ADMIN)).status == 400

        await sign_in(gw.client)
        html = await (await gw.client.get("/admin/usage?days=7")).text()
        assert 'id="usage-chart"' in html and html.count('class="usage-answers"') == 2
        assert 'id="unknown-note"' in html and "1 answer came without token counts" in html
        assert "telegram:3003" in html and 'id="top-chats"' in html
        assert 'href="/admin/usage"' in html


async def test_usage_is_an_admin_command_in_telegram_and_line(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with fakes() as (telegram, line):
        settings = rig_settings(make_settings, fake_llm, telegram, line)
        async with running(settings, telegram, line, fake_llm) as rig:
            await _say(rig, MALLORY, "a question")
            (said,) = await _say(rig, ALICE, "/usage")
            assert said.startswith("Usage ") and "Answers: 1 ·" in said
            assert "telegram:1003: 1 answer, " in said
            (refused,) = await _say(rig, MALLORY, "/usage")
            assert "not allowed" in refused.lower()
            token = rig.line.issue_reply_token(to=LINE_ADMIN)
            await rig.post_line(text_event("/usage", user_id=LINE_ADMIN, reply_token=token))
            await rig.idle()
            (sent,) = rig.line.delivered_messages(LINE_ADMIN)
            assert str(sent["text"]).startswith("Usage ") and "Answers: 1 ·" in str(sent["text"])


_ids = iter(range(50_000, 10_000_000))


async def _say(rig: Rig, user: int, text: str) -> list[str]:
    before = len(rig.telegram.sent_texts(user))
    await rig.post_telegram(make_text_update(next(_ids), text, chat_id=user, user_id=user))
    await rig.idle()
    return rig.telegram.sent_texts(user)[before:]


@pytest.fixture
async def seeded(tmp_path: Path) -> AsyncIterator[dict[str, str]]:
    """A data dir with a private chat of telegram user 5005 and an old one of 6006."""
    data = tmp_path / "data"
    data.mkdir()
    async with SqliteStore(data / "skillgate.db") as store:
        now = time.time()
        for user, at in (("5005", now), ("6006", now - 40 * 86400)):
            s = await current_session(store, "telegram", user, user, at, 60)
            await add_message(store, s.id, "user", f"hi from {user}", now=at, user_id=user)
            trace = Trace(prompt_tokens=12, completion_tokens=3, model="m")
            await add_message(store, s.id, "assistant", "hello", trace=trace, now=at, user_id=user)
    yield {"SKILLGATE_DATA_DIR": str(data), "LLM_PRICES": "m=1/1"}


async def test_the_terminal_commands_usage_export_forget_and_retention(
    seeded: dict[str, str], tmp_path: Path
) -> None:
    code, out, _ = await skillgate("usage", "--days", "7", "--json", env=seeded)
    assert code == 0
    report = json.loads(out)
    assert report["answers"]["tokens"] == 15 and report["users"][0]["user"] == "telegram:5005"

    target = tmp_path / "export.json"
    code, out, _ = await skillgate("export", "telegram", "5005", "-o", str(target), env=seeded)
    assert code == 0 and "wrote 2 message(s)" in out
    assert [m["text"] for m in json.loads(target.read_text())["messages"]] == [
        "hi from 5005",
        "hello",
    ]

    code, _, err = await skillgate("forget", "telegram", "5005", env=seeded)
    assert code == 2 and "--yes" in err  # no terminal to confirm on
    code, out, _ = await skillgate("forget", "telegram", "5005", "--yes", env=seeded)
    assert code == 0 and "1 session(s), 2 message(s)" in out
    code, out, _ = await skillgate("export", "telegram", "5005", env=seeded)
    assert json.loads(out)["messages"] == []

    code, out, _ = await skillgate("retention", env={**seeded, "SKILLGATE_RETENTION_DAYS": "30"})
    assert code == 0 and "deleted 1 session(s) with 2 message(s)" in out
    code, out, _ = await skillgate("usage", "--days", "7", env=seeded)
    assert code == 0 and "Answers: 0 ·" in out


def test_speech_and_pictures_are_priced_apart_and_in_the_total() -> None:
    day = date(2026, 3, 2)
    report = UsageReport(day, day, priced=True)
    report.speech_seconds, report.spoken_seconds, report.images = 120.0, 60.0, 3
    report.media_prices = MediaPrices(
        transcribed_per_minute=0.006, spoken_per_minute=0.015, per_image=0.04
    )
    assert report.media_cost == pytest.approx(2 * 0.006 + 0.015 + 3 * 0.04)
    assert report.as_json()["cost"] == pytest.approx(report.media_cost)
    text = usage_text(report)
    assert "Pictures: 3 made" in text
    assert "Speech and pictures cost: 0.1470" in text
    assert "Total cost: 0.1470" in text


def test_the_usage_chart_ticks_are_round() -> None:
    from gateway.admin.console_usage import _short, round_ticks

    assert [_short(v) for v in round_ticks(1323)] == ["0", "500", "1k", "1.5k"]
    assert [_short(v) for v in round_ticks(999)] == ["0", "250", "500", "750", "1k"]
    assert [_short(v) for v in round_ticks(12_000)] == ["0", "5k", "10k", "15k"]
    assert [_short(v) for v in round_ticks(2_600_000)] == ["0", "1M", "2M", "3M"]
    assert round_ticks(3) == [0, 1, 2, 3] and round_ticks(0) == [0, 1]
