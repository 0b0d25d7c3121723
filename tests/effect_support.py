"""Skill-effect test helpers: planted skills, seeded rated answers, and a small simulated world.

The world: users ask about a few topics; the scripted model loads a planted
skill when its topic comes up and the skill is offered, and its answer shows
which skill shaped it; simulated users rate 👍 with a probability that depends
on what they read. Turns go through the real agent, ratings through the store.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gateway.config import Settings
from gateway.core.models import ChatRef, IncomingMessage, MessageKind
from gateway.core.records import SkillRecord, Trace
from gateway.core.tools import ToolCallRecord, ToolStatus
from gateway.runtime.assembly import Parts
from gateway.skills.library import Skill, content_hash, render_skill
from gateway.store import SqliteStore, Store
from tests.fakes.openai_server import FakeOpenAI, Scripted
from tests.store_support import add_message, current_session

KITCHEN = "kitchen-tips"
KITCHEN_DESCRIPTION = "Cooking advice: use when someone asks for a recipe or how to cook."
RAMBLE = "# RAMBLE\n\nTell a long story about your grandmother before the recipe."
BIKE = "bike-repair"
BIKE_DESCRIPTION = "Bicycle repairs: use when someone asks how to fix a bike."
CRISP = "# CRISP\n\nGive the exact steps first, tools in brackets."


def skill_text(name: str, description: str, body: str) -> str:
    return render_skill(Skill(name=name, description=description, body=body))


async def plant(
    settings: Settings, name: str, description: str, body: str, *, source: str = "custom"
) -> None:
    """A skill on disk before the gateway starts; `auto` ones are registered as automation's."""
    folder = settings.skills_dir / name
    folder.mkdir(parents=True, exist_ok=True)
    text = skill_text(name, description, body)
    (folder / "SKILL.md").write_text(text)
    if source != "custom":
        async with SqliteStore(settings.db_path) as store:
            await store.put_skill_records(
                [
                    SkillRecord(
                        slug=name,
                        source=source,
                        content_hash=content_hash(text),
                        created_at=1.0,
                        updated_at=1.0,
                    )
                ]
            )


_chats = iter(range(1, 10_000_000))


async def seed_answer(
    store: Store,
    *,
    loaded: Sequence[str] = (),
    offered: Sequence[str] = (),
    withheld: Sequence[str] = (),
    ratings: Sequence[int] = (1,),
    kind: MessageKind = "normal",
    tool_calls: Sequence[ToolStatus] = (),
) -> tuple[int, int]:
    """One finished session with one answer, its trace (with a call of `toy__echo` ending in
    each of `tool_calls`) and ratings (one per user); ids back."""
    chat = f"effect-{next(_chats)}"
    session = await current_session(store, "telegram", chat, "u0", 0.0, 60)
    await add_message(store, session.id, "user", "a question")
    trace = Trace(
        skills_offered=list(dict.fromkeys([*offered, *loaded])),
        skills_loaded=list(loaded),
        skills_withheld=list(withheld),
        tools_used=["load_skill"] if loaded else [],
        tool_calls=[
            ToolCallRecord(server="toy", tool="echo", arguments="{}", status=status)
            for status in tool_calls
        ],
    )
    reply = await add_message(store, session.id, "assistant", "an answer", kind=kind, trace=trace)
    for user, rating in enumerate(ratings):
        await store.set_feedback(reply.id, f"u{user}", rating)
    await store.finish_chat_session("telegram", chat, "new")
    return session.id, reply.id


async def seed_many(store: Store, count: int, up: int, **kwargs: Any) -> None:
    """`count` answers, the first `up` of them rated 👍 and the rest 👎."""
    for i in range(count):
        await seed_answer(store, ratings=(1 if i < up else -1,), **kwargs)


def json_mode(body: dict[str, Any]) -> bool:
    return body.get("response_format") is not None


@dataclass
class World:
    """Topics, the skill the model loads for each, and how users rate what they read."""

    loads: dict[str, str] = field(default_factory=lambda: {"recipe": KITCHEN, "bike": BIKE})
    queries: tuple[str, ...] = (
        "Can you give me a recipe for leek soup?",
        "How do I fix a flat bike tyre?",
        "What is a good name for a grey cat?",
    )
    p_up: dict[str, float] = field(default_factory=lambda: {"RAMBLE": 0.15, "CRISP": 0.9})
    p_base: float = 0.65
    seed: int = 1
    turns: int = 0

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def model(self, body: dict[str, Any]) -> Scripted | str:
        """The scripted model: load a topic's skill when offered, then answer in its manner."""
        if json_mode(body):
            return json.dumps({"proposals": []})  # synthesis finds nothing to propose
        messages = body["messages"]
        last = messages[-1]
        if last["role"] == "tool":
            return f"Answer in the manner of {last['content'].splitlines()[0]}"
        system = str(messages[0]["content"])
        for word, skill in self.loads.items():
            if word in str(last["content"]).lower() and f"- {skill}:" in system:
                return Scripted(tool_calls=[("load_skill", {"name": skill})])
        return "A plain, direct answer."

    def install(self, fake: FakeOpenAI) -> None:
        fake.default = self.model

    def rating(self, text: str) -> int:
        """A simulated user's press after reading an answer."""
        p = next((p for marker, p in self.p_up.items() if marker in text), self.p_base)
        return 1 if self.rng.random() < p else -1

    async def round(self, parts: Parts, times: int = 1) -> None:
        """Every query asked `times` times by new users, each answer rated."""
        for _ in range(times):
            for query in self.queries:
                self.turns += 1
                user = f"sim-{self.turns}"
                chat = ChatRef(channel="telegram", chat_id=user, user_id=user)
                reply = await parts.agent.respond(IncomingMessage(chat=chat, text=query))
                assert reply.kind == "normal" and reply.message_id is not None, reply
                await parts.store.set_feedback(reply.message_id, user, self.rating(reply.text))
