"""Tools files for tests, the real PyPI servers to put in them, and the last answer's trace."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

from gateway.core.records import Trace
from gateway.store import Store

TIME_SERVER = {
    "command": sys.executable,
    "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"],
    "trusted": True,
}


def git_server(repository: Path, **extra: Any) -> dict[str, Any]:
    """mcp-server-git on one repository."""
    return {
        "command": sys.executable,
        "args": ["-m", "mcp_server_git", "--repository", str(repository)],
        **extra,
    }


def tools_file(folder: Path, **content: Any) -> Path:
    """A tools.yaml with `content` (servers=..., web=...) in `folder`."""
    path = folder / "tools.yaml"
    path.write_text(yaml.safe_dump(content, sort_keys=False), encoding="utf-8")
    return path


async def last_trace(store: Store, session_id: int = 1) -> Trace:
    """The trace of the newest answer in a session."""
    entries = await store.session_transcript(session_id)
    traces = [e.trace for e in entries if e.trace is not None]
    assert traces, "no answer was stored"
    return traces[-1]


def tool_names(request: dict[str, Any]) -> list[str]:
    """The names of the tools a model request offered."""
    return [t["function"]["name"] for t in request.get("tools") or []]
