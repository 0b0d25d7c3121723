"""The gateway the hostile corpus and the property tests send to (one per test module)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from gateway.admin import console_auth
from gateway.config import Settings
from tests.cards_support import ALICE, LINE_OTHER, Rig, fakes, rig_settings, running
from tests.fakes.line_api import text_event
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import make_text_update
from tests.reliability.hostile import TOKEN, Seeded

_ENV_PREFIXES = ("SKILLGATE_", "TELEGRAM_", "LINE_", "LLM_")


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
