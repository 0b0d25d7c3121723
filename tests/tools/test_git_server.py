"""mcp-server-git on a temporary repository: reads run, writes ask first, git_reset is admin's."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from gateway.config import Settings
from gateway.core.models import ChatRef, IncomingMessage
from gateway.core.tools import AskedCall, ToolAccess
from gateway.runtime.assembly import close_parts, open_parts
from tests.fakes.openai_server import FakeOpenAI
from tests.tools.support import git_server, last_trace, tool_names, tools_file

CHAT = ChatRef(channel="console", chat_id="c1", user_id="u1")


def repository(folder: Path) -> Path:
    repo = folder / "notes"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    (repo / "a.txt").write_text("one\n")
    subprocess.run([*git, "add", "a.txt"], check=True)
    subprocess.run([*git, "commit", "-qm", "first"], check=True)
    (repo / "b.txt").write_text("two\n")
    return repo


def staged(repo: Path) -> str:
    run = subprocess.run(
        ["git", "-C", str(repo), "diff", "--cached", "--name-only"],
        check=True,
        capture_output=True,
        text=True,
    )
    return run.stdout.strip()


async def test_git_reads_run_writes_need_confirmation_and_reset_is_for_admins(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    repo = repository(tmp_path)
    entry = git_server(repo, trusted=True, tools={"git_reset": {"policy": "admin"}})
    settings = make_settings(
        llm_base_url=fake_llm.base_url,
        llm_model="fake-model",
        tools_file=tools_file(tmp_path, servers={"git": entry}),
        tool_connect_timeout_seconds=60,
    )
    asked: list[tuple[str, str]] = []
    answers = [False, True]

    async def confirm(tool: str, call: AskedCall) -> bool:
        asked.append((tool, call.text))
        return answers.pop(0)

    fake_llm.tool_call("git__git_status", repo_path=str(repo))
    fake_llm.tool_call("git__git_add", repo_path=str(repo), files=["b.txt"])  # declined
    fake_llm.tool_call("git__git_add", repo_path=str(repo), files=["b.txt"])  # allowed
    fake_llm.reply("b.txt is staged.")
    fake_llm.reply("hello, admin")
    parts = await open_parts(settings)
    try:
        assert parts.tools is not None
        await parts.tools.start()
        user = ToolAccess(confirm=confirm)
        await parts.agent.respond(IncomingMessage(chat=CHAT, text="stage b.txt"), access=user)
        trace = await last_trace(parts.store)
        admin = ToolAccess(admin=True, confirm=confirm)
        await parts.agent.respond(IncomingMessage(chat=CHAT, text="hi"), access=admin)
    finally:
        await close_parts(parts)
    offered = tool_names(fake_llm.requests[0])
    assert {"git__git_status", "git__git_add", "git__git_commit"} <= set(offered)
    assert "git__git_reset" not in offered
    assert "git__git_reset" in tool_names(fake_llm.requests[-1])
    assert "b.txt" in fake_llm.requests[1]["messages"][-1]["content"]  # status ran unasked
    assert [tool for tool, _ in asked] == ["git__git_add", "git__git_add"]
    assert '• files: ["b.txt"]' in asked[0][1].splitlines()
    assert [c.status for c in trace.tool_calls] == ["ok", "declined", "ok"]
    assert staged(repo) == "b.txt"
