"""`skillgate tools list`: each configured server started, its tools with their policies."""

from __future__ import annotations

from gateway.channels.registry import secrets
from gateway.config import Settings
from gateway.tools.build import build_tools
from gateway.tools.config import tools_file_path
from gateway.tools.toolbox import ServerStatus


def describe(status: ServerStatus) -> list[str]:
    """A server's line, then one line per tool."""
    state = f"running, {len(status.tools)} tools" if status.alive else f"down: {status.error}"
    lines = [f"{status.name} ({status.transport}): {state}"]
    width = max((len(name) for name, *_ in status.tools), default=0)
    for name, policy, groups, read_only in status.tools:
        notes = ["read-only" if read_only else "changes things"]
        if groups:
            notes.append("groups allowed")
        lines.append(f"  {name:<{width}}  {policy:<7}  {', '.join(notes)}")
    return lines


async def list_tools(settings: Settings) -> int:
    """Start every configured server, list it, stop it; 1 when one is down."""
    tools = build_tools(settings, secrets(settings))
    if tools is None:
        path = tools_file_path(settings.data_dir, settings.tools_file)
        print(f"no tools configured ({path} lists none)")
        return 0
    await tools.start()
    try:
        statuses = tools.status()
    finally:
        await tools.stop()
    for status in statuses:
        print("\n".join(describe(status)))
    return 0 if all(s.alive for s in statuses) else 1
