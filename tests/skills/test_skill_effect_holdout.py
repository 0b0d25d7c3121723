"""Holdout: a skill under evaluation is withheld from a random share of turns, and traced."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from gateway.config import Settings
from gateway.core.models import ChatRef, IncomingMessage
from gateway.runtime.assembly import close_parts, open_parts
from gateway.skills.effect import settled
from tests.fakes.openai_server import FakeOpenAI, Scripted

SUMMARIZE = "summarize-text"


def always_load(name: str) -> Callable[[dict[str, Any]], Scripted | str]:
    """A model that loads `name` first in every turn, then answers with what it got."""

    def model(body: dict[str, Any]) -> Scripted | str:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return "loaded" if not last["content"].startswith("error:") else "went without"
        return Scripted(tool_calls=[("load_skill", {"name": name})])

    return model


async def test_a_withheld_skill_is_neither_offered_nor_loadable_and_the_trace_says_so(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = make_settings(
        llm_base_url=fake_llm.base_url, llm_model="fake-model", skill_holdout=0.5
    )
    fake_llm.default = always_load(SUMMARIZE)
    parts = await open_parts(settings)
    try:
        assert SUMMARIZE in parts.catalog.evaluating  # never rated: under evaluation
        parts.agent.rng = random.Random(7)
        seen = {"withheld": 0, "offered": 0}
        for i in range(12):
            before = len(fake_llm.requests)
            chat = ChatRef(channel="telegram", chat_id=f"c{i}", user_id="u")
            reply = await parts.agent.respond(IncomingMessage(chat=chat, text="sum this up"))
            first, second = fake_llm.requests[before:]
            trace = await parts.store.get_trace(reply.message_id or 0)
            assert trace is not None
            assert not set(trace.skills_withheld) & set(trace.skills_offered)
            index = first["messages"][0]["content"]
            for name in trace.skills_offered:
                assert f"- {name}:" in index
            if SUMMARIZE in trace.skills_withheld:
                seen["withheld"] += 1
                assert f"- {SUMMARIZE}:" not in index
                assert second["messages"][-1]["content"].startswith("error: no enabled skill")
                assert reply.text == "went without" and trace.skills_loaded == []
            else:
                seen["offered"] += 1
                assert reply.text == "loaded" and trace.skills_loaded == [SUMMARIZE]
        # With a seeded RNG the split is repeatable; both kinds of turn happened.
        assert seen["withheld"] > 0 and seen["offered"] > 0
    finally:
        await close_parts(parts)


async def test_no_holdout_once_a_skill_has_its_evidence_or_when_turned_off(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.default = always_load(SUMMARIZE)

    async def withheld(settings: Settings, settle: bool) -> set[str]:
        parts = await open_parts(settings)
        try:
            if settle:
                # As if every skill's current text had reached the minimum evidence.
                parts.catalog.settle(
                    {r.slug: r.content_hash for r in await parts.store.skill_records()}
                )
                assert parts.catalog.evaluating == frozenset()
            parts.agent.rng = random.Random(7)
            out: set[str] = set()
            for i in range(10):
                chat = ChatRef(channel="telegram", chat_id=f"c{i}", user_id="u")
                reply = await parts.agent.respond(IncomingMessage(chat=chat, text="sum up"))
                trace = await parts.store.get_trace(reply.message_id or 0)
                assert trace is not None
                out.update(trace.skills_withheld)
            return out
        finally:
            await close_parts(parts)

    base = {"llm_base_url": fake_llm.base_url, "llm_model": "fake-model"}
    assert await withheld(make_settings(**base, skill_holdout=0.5), settle=False)
    assert await withheld(make_settings(**base, skill_holdout=0.5), settle=True) == set()
    assert await withheld(make_settings(**base, skill_holdout=0), settle=False) == set()


async def test_a_changed_text_is_under_evaluation_again(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = make_settings(llm_base_url=fake_llm.base_url, llm_model="fake-model")
    parts = await open_parts(settings)
    try:
        records = await parts.store.skill_records()
        parts.catalog.settle({r.slug: r.content_hash for r in records})
        assert parts.catalog.evaluating == frozenset()
        changed = next(r for r in records if r.slug == SUMMARIZE)
        await parts.store.put_skill_records(
            [changed.model_copy(update={"content_hash": "a-new-text"})]
        )
        await parts.catalog.refresh()
        assert parts.catalog.evaluating == {SUMMARIZE}
        rule = parts.synthesizer.config.effect
        assert settled(await parts.synthesizer.effects(), rule) == {}
    finally:
        await close_parts(parts)
