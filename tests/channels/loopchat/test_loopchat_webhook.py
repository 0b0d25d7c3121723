"""Loopchat's webhook is the shared one: it says its secret header and its updates, and gets
the bounded read, the 4xx for what is malformed and store-before-200 with the rest."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from gateway.config import Settings
from tests.channels.loopchat.channel import SECRET_HEADER
from tests.channels.loopchat.driver import loopchat_rig
from tests.channels.loopchat.fake import TOKEN
from tests.fakes.openai_server import FakeOpenAI

JSON = {SECRET_HEADER: TOKEN, "Content-Type": "application/json"}


async def test_malformed_and_oversized_bodies_are_4xx_and_nothing_is_stored(
    installed: Path, make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with loopchat_rig(make_settings, fake_llm) as chat:
        client, store = chat.client, chat.parts.store
        bad = {
            b"not json": 400,
            b"[1, 2]": 400,
            b'{"id": 1, "chat": "u1"}': 400,
            b'{"id": "e1", "chat": "u1", "text": "\\ud83d"}': 400,
            b"[" * 100_000: 413,
            json.dumps({"id": "e2", "chat": "u1", "text": "x" * 70_000}).encode(): 413,
        }
        for body, status in bad.items():
            resp = await client.post("/webhook/loopchat", data=body, headers=JSON)
            assert resp.status == status, body[:40]
        plain = {SECRET_HEADER: TOKEN, "Content-Type": "text/plain"}
        resp = await client.post(
            "/webhook/loopchat", data=b'{"id": "e3", "chat": "u1"}', headers=plain
        )
        assert resp.status == 415
        assert (await chat.forged()).status == 401
        assert await store.inbox_pending_count() == 0
        assert chat.fake.sent == [] and fake_llm.requests == []
