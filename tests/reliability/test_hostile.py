"""Hostile requests from the corpus, through the real app: a 4xx or a silent ignore, never a 500.

One gateway (Telegram and LINE, admins on both, a pending proposal, an answer in each app)
serves every case in turn; each case's state must be unchanged where the corpus says so.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from aiohttp import ClientResponse

from gateway.admin import console_auth
from gateway.channels.line_format import MAX_TEXT_UTF16
from gateway.channels.telegram_format import MAX_TEXT
from gateway.channels.text import utf16_len
from gateway.config import Settings
from tests.cards_support import ALICE, LINE_OTHER, Rig, fakes, rig_settings, running
from tests.fakes.line_api import text_event
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import html_to_plain, make_text_update
from tests.reliability.hostile import (
    TOKEN,
    Request,
    Seeded,
    build,
    expand,
    load_corpus,
    replayed,
    send_raw,
)
from tests.reliability.state import KEYS, inbox_errors, snapshot

CASES = load_corpus()["requests"]
_ENV_PREFIXES = ("SKILLGATE_", "TELEGRAM_", "LINE_", "LLM_")


def named(unchanged: str | list[str]) -> list[str]:
    """The state keys a case's `unchanged` names."""
    if unchanged == "all":
        return list(KEYS)
    if unchanged == "all-but-inbox":
        return [key for key in KEYS if key != "inbox"]
    return list(unchanged)


def echo(body: dict[str, Any]) -> str:
    return f"re: {body['messages'][-1]['content']}"


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def hostile(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[Rig, Seeded]]:
    """The gateway every case is sent to, with what the placeholders refer to."""
    data = tmp_path_factory.mktemp("hostile") / "data"
    saved = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith(_ENV_PREFIXES)}

    def make_settings(**values: Any) -> Settings:
        return Settings(_env_file=None, data_dir=data, llm_timeout_seconds=5, **values)  # type: ignore[call-arg]

    try:
        async with FakeOpenAI() as llm, fakes() as (telegram, line):
            settings = rig_settings(make_settings, llm, telegram, line)
            async with running(settings, telegram, line, llm) as rig:
                yield rig, await seed(rig)
    finally:
        os.environ.update(saved)


async def seed(rig: Rig) -> Seeded:
    """An answer in a Telegram chat and in a LINE chat, a pending proposal, a console session."""
    proposal = await rig.propose()
    rig.llm.default = echo
    await rig.post_telegram(make_text_update(1, "seed question", chat_id=ALICE, user_id=ALICE))
    await rig.idle()
    tg_call = [c for c in rig.telegram.calls_of("sendMessage") if c.params["chat_id"] == ALICE][-1]
    # The answer is the newest message in Alice's chat (her proposal card came before it).
    tg_message_id = max(m for c, m in rig.telegram.messages if c == ALICE)
    rate = tg_call.params["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
    tg_answer = int(rate.split(":")[1])
    token = rig.line.issue_reply_token(to=LINE_OTHER)
    await rig.post_line(text_event("seed question", user_id=LINE_OTHER, reply_token=token))
    answer = rig.line.delivered_messages(LINE_OTHER)[-1]
    line_answer = int(answer["quickReply"]["items"][0]["action"]["data"].split(":")[1])
    resp = await rig.client.post(
        "/admin/login", data={"token": TOKEN, "next": "/admin/"}, allow_redirects=False
    )
    assert resp.status == 303, await resp.text()
    session = resp.cookies[console_auth.COOKIE].value
    csrf = console_auth.csrf_token(console_auth.console_key(TOKEN), session)
    return Seeded(tg_answer, tg_message_id, line_answer, proposal, csrf)


async def send(rig: Rig, request: Request) -> int:
    if request.raw_headers is not None:
        server = rig.client.server
        return await send_raw(str(server.host), int(server.port or 0), request)
    resp: ClientResponse = await rig.client.request(
        request.method,
        request.path,
        data=request.body,
        headers=request.headers,
        allow_redirects=False,
    )
    await resp.read()
    return resp.status


def expected(case: dict[str, Any], status: int) -> bool:
    want = case["expect"]
    return 400 <= status < 500 if want == "4xx" else status == int(want)


def said(rig: Rig, before: int, line_before: int) -> list[str]:
    """What people were told since the case was sent: Telegram acks and messages, LINE texts."""
    telegram = [str(c.params.get("text", "")) for c in rig.telegram.calls[before:]]
    return telegram + rig.line.delivered_texts()[line_before:]


def check_answered(rig: Rig, before: int, line_before: int) -> None:
    """An answer arrived, each message within its platform's limit."""
    sends = [c for c in rig.telegram.calls[before:] if c.method == "sendMessage"]
    lines = rig.line.delivered_texts()[line_before:]
    assert sends or lines, "the text was not answered"
    for call in sends:
        assert call.status == 200
        text = str(call.params["text"])
        visible = html_to_plain(text) if call.params.get("parse_mode") == "HTML" else text
        assert len(visible) <= MAX_TEXT
    for text in lines:
        assert 0 < utf16_len(text) <= MAX_TEXT_UTF16
    first = html_to_plain(str(sends[0].params["text"])) if sends else lines[0]
    assert first.startswith("re: ")


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
async def test_hostile_request(case: dict[str, Any], hostile: tuple[Rig, Seeded]) -> None:
    rig, seeded = hostile
    case = expand(case, rig, seeded)
    request = build(case, rig, seeded)
    if case.get("replay"):
        assert await send(rig, request) == 200
        await rig.idle()
        request = replayed(request, case["replay"] == "redelivery")
    errors = await inbox_errors(rig)
    before = await snapshot(rig)
    calls, line_sent = len(rig.telegram.calls), len(rig.line.delivered_texts())
    status = await send(rig, request)
    await rig.idle()
    after = await snapshot(rig)
    assert status < 500
    assert expected(case, status), f"got {status}, expected {case['expect']}"
    assert await inbox_errors(rig) == errors, "a handler failed on this input"
    keys = named(case["unchanged"])
    changed = [key for key in keys if before[key] != after[key]]
    assert not changed, {key: (before[key], after[key]) for key in changed}
    if case.get("answered"):
        check_answered(rig, calls, line_sent)
    if "says" in case:
        assert case["says"] in said(rig, calls, line_sent)


def test_the_corpus_has_at_least_sixty_cases_with_unique_ids() -> None:
    corpus = load_corpus()
    ids = [c["id"] for cases in corpus.values() for c in cases]
    assert len(ids) >= 60 and len(ids) == len(set(ids))


def test_every_case_names_known_state() -> None:
    for case in CASES:
        assert set(named(case["unchanged"])) <= set(KEYS), case["id"]
