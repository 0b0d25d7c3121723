"""The tools file: what it may say, what a stdio server sees, and no SDK without servers."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from gateway.config import Settings
from gateway.core.models import ChatRef, IncomingMessage
from gateway.core.tools import AskedCall, ToolAccess
from gateway.errors import ConfigError
from gateway.runtime.assembly import close_parts, open_parts
from gateway.tools.config import load_tools_file
from gateway.tools.policy import RemoteTool, Rule
from gateway.tools.toolbox import Mounted, Tools
from tests.fakes.openai_server import FakeOpenAI
from tests.tools.support import TIME_SERVER, tool_names, tools_file

ENV_SERVER = textwrap.dedent(
    """
    import json, os, sys
    from mcp.server.mcpserver import MCPServer
    from mcp.types import ToolAnnotations

    server = MCPServer("envy")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def environment() -> str:
        "Every environment variable this process sees."
        return json.dumps(dict(os.environ))

    @server.tool()
    def die() -> str:
        "Exit at once, as a crashing server does."
        os._exit(3)

    print("envy starting with key=sk-live-abcdef123456", file=sys.stderr, flush=True)
    server.run("stdio")
    """
)
SECRETS = {
    "TELEGRAM_BOT_TOKEN": "123456:telegram-token-value",
    "LINE_CHANNEL_ACCESS_TOKEN": "line-access-token-value",
    "LLM_API_KEY": "sk-llm-key-value-123",
    "SKILLGATE_ADMIN_TOKEN": "admin-token-value",
    "TELEGRAM_WEBHOOK_SECRET": "webhook-secret-value",
}


async def always(tool: str, call: AskedCall) -> bool:
    return True


def test_a_server_may_not_be_given_the_gateways_own_settings(tmp_path: Path) -> None:
    path = tools_file(tmp_path, servers={"x": {"command": "x", "env": ["SKILLGATE_ADMIN_TOKEN"]}})
    with pytest.raises(ConfigError, match="SKILLGATE_ADMIN_TOKEN is the gateway's own"):
        load_tools_file(path)


@pytest.mark.parametrize(
    ("servers", "problem"),
    [
        ({"a__b": {"command": "x"}}, "server name"),
        ({"both": {"command": "x", "url": "http://127.0.0.1/mcp"}}, "either command"),
        ({"x": {"command": "x", "tools": {"t": {"policy": "sometimes"}}}}, "policy"),
    ],
)
def test_a_bad_tools_file_is_refused_with_what_is_wrong(
    tmp_path: Path, servers: dict[str, object], problem: str
) -> None:
    with pytest.raises(ConfigError, match=problem):
        load_tools_file(tools_file(tmp_path, servers=servers))


def test_without_servers_the_mcp_sdk_is_never_imported(tmp_path: Path) -> None:
    data = tmp_path / "data"
    probe = textwrap.dedent(
        f"""
        import asyncio, sys
        from pathlib import Path
        from gateway.runtime.assembly import close_parts, open_parts
        from gateway.config import Settings
        from gateway.tools.build import build_tools

        async def main(data):
            settings = Settings(_env_file=None, SKILLGATE_DATA_DIR=data)
            parts = await open_parts(settings)
            print(parts.tools is not None, "mcp" in sys.modules)
            await close_parts(parts)
            (data / "tools.yaml").write_text(sys.argv[1])
            print(build_tools(settings, []) is not None, "mcp" in sys.modules)

        asyncio.run(main(Path({str(data)!r})))
        """
    )
    with_server = json.dumps({"servers": {"time": TIME_SERVER}})
    run = subprocess.run(
        [sys.executable, "-c", probe, with_server],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    # No tools file: no toolbox and no SDK; a file with a server: both (the probe works).
    assert run.stdout.split() == ["False", "False", "True", "True"]


async def test_a_stdio_server_sees_no_secret_and_its_stderr_is_logged_masked(
    make_settings: Callable[..., Settings],
    fake_llm: FakeOpenAI,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("NOTES_DIR", "/srv/notes")
    script = tmp_path / "envy.py"
    script.write_text(ENV_SERVER, encoding="utf-8")
    server = {
        "command": sys.executable,
        "args": [str(script)],
        "env": ["NOTES_DIR"],
        "trusted": True,
    }
    settings = make_settings(
        llm_base_url=fake_llm.base_url,
        llm_model="fake-model",
        tools_file=tools_file(tmp_path, servers={"envy": server}),
        tool_connect_timeout_seconds=60,
    )
    fake_llm.tool_call("envy__environment")
    fake_llm.reply("done")
    fake_llm.tool_call("envy__die")
    fake_llm.reply("the tool broke")
    fake_llm.reply("no tools now")
    caplog.set_level(logging.INFO, logger="gateway.tools")
    parts = await open_parts(settings)
    try:
        assert parts.tools is not None
        await parts.tools.start()
        chat = ChatRef(channel="console", chat_id="c", user_id="u")
        await parts.agent.respond(IncomingMessage(chat=chat, text="env?"))
        # It dies during a call: the user still gets an answer, and its tools are left out.
        allow = ToolAccess(confirm=always)
        died = await parts.agent.respond(IncomingMessage(chat=chat, text="die"), access=allow)
        assert died.text == "the tool broke"
        await parts.agent.respond(IncomingMessage(chat=chat, text="hi"), access=allow)
    finally:
        await close_parts(parts)
    result = fake_llm.requests[1]["messages"][-1]["content"]
    seen = json.loads(result.split("\n", 2)[2].rsplit("\n", 1)[0])
    assert seen["NOTES_DIR"] == "/srv/notes"
    assert "PATH" in seen
    assert not [k for k in seen if k.startswith(("SKILLGATE_", "TELEGRAM_", "LINE_", "LLM_"))]
    for value in SECRETS.values():
        assert value not in result
    said = [r.getMessage() for r in caplog.records if "envy starting" in r.getMessage()]
    assert said == ["tool server envy says: envy starting with key=[redacted]"]
    assert "envy__die" in tool_names(fake_llm.requests[2])
    assert not [n for n in tool_names(fake_llm.requests[4]) if n.startswith("envy__")]
    down = [r for r in caplog.records if "tool server envy is unavailable" in r.getMessage()]
    assert len(down) == 1  # said once


class OddServer:
    """A server listing a tool whose name no model accepts, and the same name twice."""

    def __init__(self) -> None:
        self.name, self.transport, self.error, self.alive = "odd", "stdio", None, True
        self.tools = [
            RemoteTool("fine", "ok " * 1000, {}, True),
            RemoteTool("has space", "x", {}, True),
            RemoteTool("fine", "again", {}, True),
        ]

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def probe(self) -> None: ...

    async def call(self, tool: str, arguments: dict[str, object]) -> tuple[str, bool]:
        return "", False


def test_tools_with_unusable_or_repeated_names_are_left_out_and_descriptions_bounded() -> None:
    tools = Tools([Mounted(OddServer(), lambda tool: Rule("auto", False))])
    [spec] = tools.offer(ToolAccess())
    assert spec.name == "odd__fine"
    assert len(spec.description) == 1024


GARBLING_SERVER = textwrap.dedent(
    """
    # A stdio server written by hand (the SDK's own keeps stray output off stdout): before
    # each call's answer it writes a line that is not UTF-8.
    import json, sys

    def send(message):
        sys.stdout.buffer.write(json.dumps(message).encode() + b"\\n")
        sys.stdout.buffer.flush()

    for line in sys.stdin.buffer:
        request = json.loads(line)
        method, ident = request.get("method"), request.get("id")
        if method == "initialize":
            result = {
                "protocolVersion": request["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "garbler", "version": "1"},
            }
        elif method == "tools/list":
            schema = {"type": "object", "properties": {}}
            tool = {"name": "garble", "description": "Answer after a bad line.",
                    "inputSchema": schema, "annotations": {"readOnlyHint": True}}
            result = {"tools": [tool]}
        elif method == "tools/call":
            sys.stdout.buffer.write(b"\\xff\\xfe not utf-8\\n")
            result = {"content": [{"type": "text", "text": "still here"}], "isError": False}
        elif ident is None:
            continue
        else:
            result = {}
        send({"jsonrpc": "2.0", "id": ident, "result": result})
    """
)


async def test_a_stdio_server_writing_a_line_that_is_not_utf8_is_not_wedged(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    script = tmp_path / "garbler.py"
    script.write_text(GARBLING_SERVER, encoding="utf-8")
    server = {"command": sys.executable, "args": [str(script)], "trusted": True}
    settings = make_settings(
        llm_base_url=fake_llm.base_url,
        llm_model="fake-model",
        tools_file=tools_file(tmp_path, servers={"garbler": server}),
        tool_connect_timeout_seconds=60,
        tool_call_timeout_seconds=10,
    )
    for _ in range(2):
        fake_llm.tool_call("garbler__garble")
        fake_llm.reply("done")
    parts = await open_parts(settings)
    try:
        assert parts.tools is not None
        await parts.tools.start()
        chat = ChatRef(channel="console", chat_id="c", user_id="u")
        for _ in range(2):
            await parts.agent.respond(IncomingMessage(chat=chat, text="garble"))
    finally:
        await close_parts(parts)
    for request in (fake_llm.requests[1], fake_llm.requests[3]):
        assert "still here" in request["messages"][-1]["content"]
