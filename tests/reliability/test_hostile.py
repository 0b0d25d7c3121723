"""Hostile requests from the corpus, through the real app: a 4xx or a silent ignore, never a 500.

One gateway (Telegram and LINE, admins on both, a pending proposal, an answer in each app)
serves every case in turn; each case's state must be unchanged where the corpus says so.
"""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp import ClientResponse

from gateway.channels.line.format import MAX_TEXT_UTF16
from gateway.channels.telegram.format import MAX_TEXT
from gateway.channels.text import utf16_len
from tests.cards_support import Rig
from tests.fakes.telegram_api import html_to_plain
from tests.reliability.hostile import (
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


def named(unchanged: str | list[str]) -> list[str]:
    """The state keys a case's `unchanged` names."""
    if unchanged == "all":
        return list(KEYS)
    if unchanged == "all-but-inbox":
        return [key for key in KEYS if key != "inbox"]
    return list(unchanged)


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
