"""Synthesis and review test helpers: seeded sessions, scripted proposals, a running gateway."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient, TestServer

from gateway.app import PARTS, build_app
from gateway.config import Settings
from gateway.core.records import Trace
from gateway.review.events import ReviewEvent
from gateway.review.reviewer import Reviewer
from gateway.runtime.assembly import Parts
from gateway.store import SqliteStore, Store
from tests.fakes.openai_server import FakeOpenAI
from tests.store_support import add_message, current_session

AUTH = {"Authorization": "Bearer admin-secret-token"}
BREVITY = "# Brevity\n\nAnswer in at most three short sentences.\nOffer details on request."
_chats = iter(range(1, 1_000_000))


def synth_settings(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, **overrides: Any
) -> Settings:
    """Settings for synthesis tests: sessions finish at once, no schedule, the fake model."""
    values: dict[str, Any] = {
        "llm_base_url": fake_llm.base_url,
        "llm_model": "fake-model",
        "admin_token": "admin-secret-token",
        "session_idle_minutes": 0,
        "synthesis_interval_minutes": 0,
        "llm_max_retries": 0,
    }
    values.update(overrides)
    return make_settings(**values)


async def seed_session(
    store: Store,
    *,
    question: str = "How should I word a reminder to my team?",
    answer: str = "Here is a long, formal reminder with many paragraphs...",
    rating: int | None = -1,
    comment: str | None = "far too long for a chat",
    loaded: Sequence[str] = (),
    failed: bool = False,
    finished: bool = True,
    channel: str = "telegram",
    at: float = 1_000.0,
    chat: str | None = None,
) -> int:
    """One session: a question, an answer with its trace, a rating; finished unless told."""
    chat = chat or f"chat-{next(_chats)}"
    session = await current_session(store, channel, chat, "u1", at, 60)
    await add_message(store, session.id, "user", question, now=at)
    trace = Trace(
        skills_loaded=list(loaded),
        tools_used=["load_skill"] if loaded else [],
        completed=not failed,
        error="ModelUnavailable: model unreachable" if failed else None,
    )
    reply = await add_message(
        store,
        session.id,
        "assistant",
        answer,
        kind="error" if failed else "normal",
        trace=trace,
        now=at,
    )
    if rating is not None:
        await store.set_feedback(reply.id, "u1", rating)
        if comment:
            await store.set_feedback_comment(reply.id, "u1", comment)
    if finished:
        await store.finish_chat_session(channel, chat, "new")
    return session.id


async def seed_offline(settings: Settings, **kwargs: Any) -> int:
    """Seed a session with the gateway stopped (as another process would find it)."""
    async with SqliteStore(settings.db_path) as store:
        return await seed_session(store, **kwargs)


def proposal(
    name: str = "chat-brevity",
    *,
    kind: str = "create",
    target: str | None = None,
    description: str = "Keep chat answers short: use when a user asks for a message or reminder.",
    content: str = BREVITY,
    based_on: Sequence[int | str] = (),
    rationale: str = "Users rated long answers down.",
) -> dict[str, Any]:
    """One proposal in the synthesis JSON contract."""
    return {
        "kind": kind,
        "target": target,
        "name": name,
        "description": description,
        "content": content,
        "based_on": list(based_on),
        "rationale": rationale,
    }


def answer(*proposals: dict[str, Any]) -> str:
    """A model answer holding these proposals."""
    return json.dumps({"proposals": list(proposals)})


def evidence_prompt(body: dict[str, Any]) -> str:
    """The user message of a recorded synthesis request."""
    return str(body["messages"][1]["content"])


@dataclass
class Gateway:
    """A running gateway and an admin client for it."""

    client: TestClient

    @property
    def parts(self) -> Parts:
        return self.client.server.app[PARTS]

    @property
    def skills_dir(self) -> Path:
        return self.parts.settings.skills_dir

    async def call(
        self, method: str, path: str, json_body: Any = None, **kwargs: Any
    ) -> tuple[int, Any]:
        resp = await self.client.request(
            method, f"/admin/api{path}", json=json_body, headers=AUTH, **kwargs
        )
        text = await resp.text()
        try:
            return resp.status, json.loads(text)
        except json.JSONDecodeError:
            return resp.status, text

    async def synthesize(self) -> dict[str, Any]:
        status, body = await self.call("POST", "/synthesize")
        assert status == 200, body
        return dict(body)

    async def seed(self, **kwargs: Any) -> int:
        return await seed_session(self.parts.store, **kwargs)


@asynccontextmanager
async def gateway(
    settings: Settings, clock: Callable[[], float] | None = None
) -> AsyncIterator[Gateway]:
    """The whole app on loopback (on `clock`, when given), stopped (cleanly) on exit."""
    app = build_app(settings, channels=[], **({"clock": clock} if clock else {}))
    client = TestClient(TestServer(app))
    await client.start_server()
    try:
        yield Gateway(client)
    finally:
        await client.close()


def follow(review: Reviewer, listener: Callable[[ReviewEvent], Awaitable[None]]) -> None:
    """Have `listener` see every review event too, after the subscribers the app listed."""
    review.events.subscribe(ReviewEvent, listener)
