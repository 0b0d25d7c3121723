"""Skills that name the tools they use (`allowed-tools`): offered only where those tools are."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gateway.config import Settings
from gateway.core.models import ChatRef, IncomingMessage
from gateway.core.tools import ToolAccess
from gateway.errors import InvalidSkill
from gateway.runtime.assembly import close_parts, open_parts
from gateway.skills.library import parse_skill, render_skill
from tests.fakes.openai_server import FakeOpenAI
from tests.tools.support import TIME_SERVER, last_trace, tools_file

SKILL = """---
name: world-clock
description: Tell the time anywhere in the world using the time tool
allowed-tools: time__get_current_time time__convert_time
---

Call time__get_current_time with the IANA zone of the place asked about.
"""
CHAT = ChatRef(channel="console", chat_id="c1", user_id="u1")


def test_allowed_tools_is_read_as_the_agent_skills_field_and_written_back() -> None:
    skill = parse_skill(SKILL)
    assert skill.allowed_tools == ["time__get_current_time", "time__convert_time"]
    assert parse_skill(render_skill(skill)) == skill
    listed = SKILL.replace(
        "allowed-tools: time__get_current_time time__convert_time",
        "allowed-tools: [time__get_current_time]",
    )
    assert parse_skill(listed).allowed_tools == ["time__get_current_time"]
    with pytest.raises(InvalidSkill, match="allowed-tools"):
        parse_skill(SKILL.replace("time__convert_time", "rm -rf;"))


async def turn(settings: Settings, text: str, *, start: bool = True) -> Any:
    parts = await open_parts(settings)
    try:
        if start and parts.tools is not None:
            await parts.tools.start()
        await parts.agent.respond(IncomingMessage(chat=CHAT, text=text), access=ToolAccess())
        return await last_trace(parts.store)
    finally:
        await close_parts(parts)


def settings_with_skill(make: Callable[..., Settings], llm: FakeOpenAI, **extra: Any) -> Settings:
    settings = make(llm_base_url=llm.base_url, llm_model="fake-model", **extra)
    folder = settings.skills_dir / "world-clock"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(SKILL, encoding="utf-8")
    return settings


async def test_a_skill_whose_tools_are_live_is_offered_and_used_with_them(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    settings = settings_with_skill(
        make_settings,
        fake_llm,
        tools_file=tools_file(tmp_path, servers={"time": TIME_SERVER}),
        tool_connect_timeout_seconds=60,
    )
    fake_llm.tool_call("load_skill", name="world-clock")
    fake_llm.tool_call("time__get_current_time", timezone="Europe/Paris")
    fake_llm.reply("It is evening in Paris.")
    trace = await turn(settings, "what time is it in Paris in the world?")
    assert "world-clock" in trace.skills_offered and trace.skills_unavailable == []
    assert trace.skills_loaded == ["world-clock"]
    assert [(c.tool, c.status) for c in trace.tool_calls] == [("get_current_time", "ok")]


async def test_a_skill_whose_tools_are_missing_is_left_out_with_the_reason(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = settings_with_skill(make_settings, fake_llm)  # no tools file: no time server
    fake_llm.reply("I cannot tell the time here.")
    trace = await turn(settings, "what time is it in Paris in the world?")
    assert "world-clock" not in trace.skills_offered
    assert "world-clock" not in fake_llm.requests[0]["messages"][0]["content"]
    assert trace.skills_unavailable == ["world-clock"]
    assert trace.skills_withheld == []  # not a holdout: the effect comparison stays clean
    assert (
        "skill world-clock left out: time__get_current_time, time__convert_time not available"
        " here" in trace.notes
    )
