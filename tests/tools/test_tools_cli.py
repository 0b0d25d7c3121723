"""Operators: `skillgate tools list` and doctor start each server and say how it went."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gateway.cli.main import main
from gateway.config import Settings
from gateway.ops.doctor import check_tools
from tests.tools.support import TIME_SERVER, tools_file

SERVERS = {"time": TIME_SERVER, "broken": {"command": "/nonexistent/mcp-server"}}


def test_tools_list_shows_each_servers_tools_and_policies_and_fails_for_one_down(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SKILLGATE_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("SKILLGATE_TOOL_CONNECT_TIMEOUT_SECONDS", "60")
    tools_file(tmp_path, servers=SERVERS)
    assert main(["tools", "list"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "time (stdio): running, 2 tools"
    assert out[1].split() == ["time__get_current_time", "auto", "read-only"]
    assert out[2].split() == ["time__convert_time", "auto", "read-only"]
    assert out[3].startswith("broken (stdio): down: ")


def test_tools_list_without_a_tools_file_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SKILLGATE_DATA_DIR", str(tmp_path))
    assert main(["tools", "list"]) == 0
    assert capsys.readouterr().out == f"no tools configured ({tmp_path}/tools.yaml lists none)\n"


async def test_doctor_checks_each_tool_server(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    settings = make_settings(
        tools_file=tools_file(tmp_path, servers=SERVERS), tool_connect_timeout_seconds=60
    )
    ok, broken = await check_tools(settings)
    assert (ok.name, ok.status, ok.detail) == ("tool server time", "ok", "stdio, 2 tools listed")
    assert (broken.name, broken.status) == ("tool server broken", "fail")
    assert "nonexistent" in broken.detail or "No such file" in broken.detail
    assert await check_tools(make_settings()) == []
