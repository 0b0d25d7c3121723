"""A tool round end to end with the real mcp-server-time (stdio), on Telegram and on LINE."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from gateway.config import Settings
from tests.fakes.line_api import text_event
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import make_text_update
from tests.line_support import REPLY, line_rig
from tests.telegram_harness import telegram_gateway
from tests.tools.support import TIME_SERVER, last_trace, tool_names, tools_file


async def test_telegram_user_gets_an_answer_made_with_the_time_server(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    path = tools_file(tmp_path, servers={"time": TIME_SERVER})
    fake_llm.tool_call("time__get_current_time", timezone="Asia/Tokyo")
    fake_llm.reply("It is morning in Tokyo.")
    async with telegram_gateway(
        make_settings, fake_llm, tools_file=path, tool_connect_timeout_seconds=60
    ) as gw:
        await gw.deliver(make_text_update(1, "What time is it in Tokyo?"))
        assert gw.fake.sent_texts() == ["It is morning in Tokyo."]
        trace = await last_trace(gw.parts.store)
    first, second = fake_llm.requests
    assert first["stream"] is True  # the tool round streams like any answer
    assert {"time__get_current_time", "time__convert_time"} <= set(tool_names(first))
    result = second["messages"][-1]
    assert result["role"] == "tool"
    assert '"timezone": "Asia/Tokyo"' in result["content"]
    assert "untrusted-tool" in result["content"]  # fenced as data
    [call] = trace.tool_calls
    assert (call.server, call.tool, call.status) == ("time", "get_current_time", "ok")
    assert call.arguments == '{"timezone": "Asia/Tokyo"}'
    assert 0 < call.result_chars < 1000 and not call.capped


async def test_line_user_gets_an_answer_made_with_the_time_server(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    path = tools_file(tmp_path, servers={"time": TIME_SERVER})
    fake_llm.tool_call(
        "time__convert_time", source_timezone="UTC", time="12:00", target_timezone="Asia/Bangkok"
    )
    fake_llm.reply("Noon in UTC is 19:00 in Bangkok.")
    async with line_rig(
        make_settings, fake_llm, tools_file=path, tool_connect_timeout_seconds=60
    ) as rig:
        await rig.deliver(text_event("noon UTC in Bangkok?", reply_token=rig.token()))
        texts = [m["text"] for c in rig.fake.calls_to(REPLY) for m in c.body["messages"]]
        trace = await last_trace(rig.store)
    assert texts[0] == "Noon in UTC is 19:00 in Bangkok."
    assert "19:00" in fake_llm.requests[1]["messages"][-1]["content"]
    [call] = trace.tool_calls
    assert (call.tool, call.status) == ("convert_time", "ok")
