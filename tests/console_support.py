"""Web console test helpers: signing in, form tokens, seeded ratings and proposals."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from aiohttp.test_utils import TestClient

from gateway.core.records import Trace
from gateway.review.events import ReviewEvent
from gateway.store import Store
from tests.fakes.openai_server import FakeOpenAI
from tests.store_support import add_message, current_session
from tests.synthesis_support import Gateway, answer, proposal

TOKEN = "admin-secret-token"
WRITING = "writing-for-chat"
NEW_WRITING = (
    "# Writing for a chat screen\n\nPeople read these answers on a phone.\n\n"
    "1. Lead with the answer in one sentence.\n2. At most three short paragraphs.\n"
    "3. Never use Markdown tables."
)
_CSRF = re.compile(r'name="csrf" value="([^"]+)"')
_chats = iter(range(1, 1_000_000))


def csrf_of(html: str) -> str:
    """The form token in a console page."""
    found = _CSRF.search(html)
    assert found, "no form token on the page"
    return found.group(1)


async def sign_in(client: TestClient, token: str = TOKEN) -> str:
    """Sign in through the login form; returns the session's form token."""
    resp = await client.post("/admin/login", data={"token": token, "next": "/admin/skills"})
    assert resp.status == 200, await resp.text()
    assert resp.url.path == "/admin/skills"
    return csrf_of(await resp.text())


def day_at(days_ago: int, hour: int = 12) -> float:
    """A moment `days_ago` UTC days before today, at `hour` UTC."""
    today = datetime.now(UTC).replace(hour=hour, minute=0, second=0, microsecond=0)
    return (today - timedelta(days=days_ago)).timestamp()


async def seed_rated_answer(
    store: Store,
    *,
    at: float,
    rating: int,
    comment: str | None = None,
    loaded: Sequence[str] = (),
    question: str = "Can you summarise this thread?",
    answer_text: str = "Here is the summary you asked for.",
    channel: str = "telegram",
) -> tuple[int, int]:
    """A finished session with one rated answer; returns (session id, answer id)."""
    chat = f"chat-{next(_chats)}"
    session = await current_session(store, channel, chat, "u1", at, 60)
    await add_message(store, session.id, "user", question, now=at)
    trace = Trace(skills_loaded=list(loaded), tools_used=["load_skill"] if loaded else [])
    reply = await add_message(store, session.id, "assistant", answer_text, trace=trace, now=at)
    await store.set_feedback(reply.id, "u1", rating, now=at)
    if comment:
        await store.set_feedback_comment(reply.id, "u1", comment, now=at)
    await store.finish_chat_session(channel, chat, "new", now=at)
    return session.id, reply.id


async def seed_proposals(gw: Gateway, fake_llm: FakeOpenAI) -> dict[str, int]:
    """A synthesis run that proposes a new skill and an update of a bundled one."""
    sid = await gw.seed(
        comment="far too long for a chat", loaded=[WRITING], answer="A very long answer..."
    )
    fake_llm.reply(
        answer(
            proposal(based_on=[sid]),
            proposal(
                WRITING,
                kind="update",
                target=WRITING,
                description="Format answers for a phone chat screen: short, no tables.",
                content=NEW_WRITING,
                based_on=[sid],
                rationale="A long answer was rated down as far too long.",
            ),
        )
    )
    run = await gw.synthesize()
    ids = {p["name"]: p["id"] for p in run["proposed"]}
    assert len(ids) == 2, run
    return {
        "create": ids["chat-brevity"],
        "update": ids[WRITING],
        "session": sid,
        "run": run["run_id"],
    }


class Decisions:
    """Follows a Reviewer (`follow`) and records every decision, as the chat cards see it."""

    def __init__(self) -> None:
        self.events: list[ReviewEvent] = []

    async def __call__(self, event: ReviewEvent) -> None:
        if event.kind == "decided":
            self.events.append(event)
