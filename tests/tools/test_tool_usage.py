"""Tool calls per day, and their failures, in usage: the admin API, the console page, /usage
in the chat and `skillgate usage` in the terminal."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from gateway.config import Settings
from gateway.usage import utc_day
from tests.console_support import sign_in
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import make_text_update
from tests.serve_process import skillgate
from tests.telegram_harness import ADMIN, telegram_gateway
from tests.tools.http_server import ToyServer
from tests.tools.support import tools_file


@pytest.fixture
async def toy() -> AsyncIterator[ToyServer]:
    async with ToyServer().running() as server:
        yield server


async def test_tool_calls_and_failures_per_day_are_in_the_api_the_console_and_the_terminal(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, tmp_path: Path, toy: ToyServer
) -> None:
    path = tools_file(tmp_path, servers={"toy": {"url": toy.url, "trusted": True}})
    fake_llm.tool_call("toy__echo", text="hi")
    fake_llm.tool_call("toy__echo")  # no text: the server answers with an error
    fake_llm.reply("Echoed.")
    async with telegram_gateway(
        make_settings, fake_llm, tools_file=path, telegram_admin_ids="1001"
    ) as gw:
        await gw.deliver(make_text_update(1, "echo hi"))
        data = await (await gw.client.get("/admin/api/usage?days=7", headers=ADMIN)).json()
        await gw.deliver(make_text_update(2, "/usage"))
        said = gw.fake.sent_texts(1001)[-1]
        await sign_in(gw.client, "admin-secret-token")
        html = (await (await gw.client.get("/admin/usage?days=7")).text()).replace("\n", "")
        data_dir = gw.parts.settings.data_dir
    today = utc_day(gw.parts.clock())
    assert data["tool_calls"] == {"calls": 2, "failed": 1}
    [day] = [d for d in data["days"] if d["day"] == today]
    assert day["tool_calls"] == {"calls": 2, "failed": 1}
    assert day["answers"]["answers"] == 1
    assert data["tools"] == [{"tool": "toy__echo", "calls": 2, "failed": 1}]
    assert "Tool calls: 2, 1 failed" in said and f"{today}: 2 calls, 1 failed" in said
    assert 'id="tool-days"' in html
    assert f'<td class="mono full" data-label="Day (UTC)">{today}</td>' in html
    assert '<td class="right" data-label="tool calls">2</td>' in html

    env = {"SKILLGATE_DATA_DIR": str(data_dir)}
    code, out, _ = await skillgate("usage", "--days", "7", env=env)
    assert code == 0
    assert "Tool calls: 2, 1 failed" in out and f"  {today}: 2 calls, 1 failed" in out


async def test_a_period_without_tool_calls_says_so(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.reply("hello")
    async with telegram_gateway(make_settings, fake_llm) as gw:
        await gw.deliver(make_text_update(1, "hi"))
        data = await (await gw.client.get("/admin/api/usage?days=1", headers=ADMIN)).json()
        await sign_in(gw.client, "admin-secret-token")
        html = await (await gw.client.get("/admin/usage?days=7")).text()
    assert data["tool_calls"] == {"calls": 0, "failed": 0} and data["tools"] == []
    assert data["days"][0]["tool_calls"] == {"calls": 0, "failed": 0}
    assert "No tool calls in this period." in html
