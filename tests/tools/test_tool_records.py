"""Tool calls on record: in the trace, the console transcript, usage and /metrics; never in
synthesis, which sees tool names and status only."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from gateway.config import Settings
from gateway.usage import utc_day
from tests.console_support import sign_in
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import make_callback_update, make_text_update
from tests.telegram_harness import ADMIN, telegram_gateway
from tests.tools.http_server import POISON, ToyServer
from tests.tools.support import tools_file


@pytest.fixture
async def toy() -> AsyncIterator[ToyServer]:
    async with ToyServer().running() as server:
        yield server


async def test_a_call_is_counted_shown_in_the_transcript_and_kept_from_synthesis(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, tmp_path: Path, toy: ToyServer
) -> None:
    path = tools_file(tmp_path, servers={"toy": {"url": toy.url, "trusted": True}})
    fake_llm.tool_call("toy__weather")
    fake_llm.reply("It is sunny.")
    fake_llm.reply(json.dumps({"proposals": []}))
    async with telegram_gateway(
        make_settings, fake_llm, tools_file=path, session_idle_minutes=0
    ) as gw:
        await gw.deliver(make_text_update(1, "weather?"))
        await gw.deliver(make_callback_update(2, "rate:2:-1"))  # a signal for synthesis
        metrics = await (await gw.client.get("/metrics")).text()
        usage = await gw.parts.store.tool_usage(utc_day(0))
        await sign_in(gw.client, "admin-secret-token")
        page = await gw.client.get("/admin/conversations/1")
        transcript = await page.text()
        tools_page = await (await gw.client.get("/admin/tools")).text()
        run = await gw.client.post("/admin/api/synthesize", headers=ADMIN)
        assert run.status == 200
    assert 'skillgate_tool_calls_total{status="ok",tool="toy__weather"} 1.0' in metrics
    assert [(tool, status, calls) for _, tool, status, calls in usage] == [
        ("toy__weather", "ok", 1)
    ]
    assert page.status == 200
    assert "toy__weather ok" in transcript and "characters" in transcript
    assert "running" in tools_page and "toy__echo" in tools_page
    assert '<td>ok</td><td class="right">1</td>' in tools_page.replace("\n", "")
    # The model read the result; synthesis sees only that the tool was called, and how it went.
    assert POISON in fake_llm.requests[1]["messages"][-1]["content"]
    synthesis = json.dumps(fake_llm.requests[2]["messages"])
    assert "toy__weather ok" in synthesis
    assert "- toy__weather: auto, read-only" in synthesis  # the tools, with their policies
    assert "- toy__note: confirm, changes things" in synthesis
    assert "PASSWORDS" not in synthesis


async def test_the_tools_page_says_when_no_tools_are_configured(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm) as gw:
        await sign_in(gw.client, "admin-secret-token")
        page = await gw.client.get("/admin/tools")
        text = await page.text()
    assert page.status == 200
    assert "No tools are configured" in text


async def test_a_proposal_names_live_tools_only_and_they_are_staged_in_its_frontmatter(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, tmp_path: Path, toy: ToyServer
) -> None:
    path = tools_file(tmp_path, servers={"toy": {"url": toy.url, "trusted": True}})
    fake_llm.tool_call("toy__weather")
    fake_llm.reply("It is sunny.")

    def proposal(name: str, tools: list[str]) -> dict[str, object]:
        return {
            "kind": "create",
            "target": None,
            "name": name,
            "description": f"Answer weather questions ({name})",
            "content": f"Call the weather tool first. ({name})",
            "based_on": [1],
            "rationale": "users ask about the weather",
            "allowed_tools": tools,
        }

    drafts = [proposal("weather-first", ["toy__weather"]), proposal("made-up", ["toy__nope"])]
    fake_llm.reply(json.dumps({"proposals": drafts}))
    async with telegram_gateway(
        make_settings, fake_llm, tools_file=path, session_idle_minutes=0
    ) as gw:
        await gw.deliver(make_text_update(1, "weather?"))
        await gw.deliver(make_callback_update(2, "rate:2:-1"))
        run = await (await gw.client.post("/admin/api/synthesize", headers=ADMIN)).json()
        staged = gw.parts.settings.skills_dir / "weather-first" / "SKILL.md.proposed"
        text = staged.read_text(encoding="utf-8")
        dropped = await gw.parts.store.run_dropped(run["run_id"])
    assert [p["name"] for p in run["proposed"]] == ["weather-first"]
    assert "allowed-tools: toy__weather" in text
    [refused] = dropped
    assert refused.name == "made-up"
    assert refused.reason == "refused: it names a tool that does not exist (toy__nope)"
