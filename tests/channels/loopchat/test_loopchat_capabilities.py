"""The conversation layer does what Loopchat's spec says it can (edits, no drafts), whatever
its responder offers: capabilities are read from the spec, never from the platform's name."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from gateway.channels.registry import platform
from gateway.config import Settings
from tests.channels.loopchat.driver import loopchat_rig
from tests.fakes.openai_server import FakeOpenAI


def test_loopchat_declares_a_capability_set_of_its_own(installed: Path) -> None:
    spec = platform("loopchat")
    assert spec is not None
    sets = {p.name: p.capabilities for p in (platform("telegram"), platform("line"), spec) if p}
    assert len(set(sets.values())) == 3, sets  # unlike either built-in platform
    assert spec.capabilities.edit and not spec.capabilities.drafts


async def test_a_press_shows_its_rating_on_the_answer_where_the_spec_declares_edits(
    installed: Path, make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with loopchat_rig(make_settings, fake_llm) as chat:
        fake_llm.reply("Paris.")
        await chat.say("The capital of France?")
        up, down = chat.rating_data()
        await chat.press(down)
        [edit] = chat.fake.edits
        [answer] = [m for m in chat.fake.messages(chat.user) if m["text"] == "Paris."]
        assert edit["id"] == answer["id"]
        assert [b["label"] for b in answer["buttons"]] == ["👍", "👎 ✓"]
        assert [b["data"] for b in answer["buttons"]] == [up, down]  # still rates the answer


async def test_the_answer_arrives_whole_where_the_spec_declares_no_drafts(
    installed: Path, make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with loopchat_rig(make_settings, fake_llm) as chat:
        fake_llm.reply("Written in one piece, then sent.")
        await chat.say("Tell me something")
        # The responder would show a preview as a "draft:" message if it were given one.
        assert chat.texts() == ["Written in one piece, then sent."]
