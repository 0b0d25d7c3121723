"""What `skillgate serve` says at start after "listening": what works, and what to do next."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from gateway.channels.registry import configured_platforms
from gateway.config import Settings
from gateway.runtime.local_model import TRYING

INIT = "`skillgate init`"


def next_steps(settings: Settings, host: str, port: int) -> list[str]:
    """One line each: the model, the bots, the console; the missing ones say how to add them."""
    lines = []
    if settings.llm_local_model is not None:
        lines.append(
            f"model: {settings.llm_model} on this machine ({TRYING}); {INIT} sets up a real one"
        )
    elif settings.model_configured:
        lines.append(f"model: {settings.llm_model} at {settings.llm_base_url}")
    else:
        lines.append(f"no model configured: every answer says so; run {INIT} to set one up")
    platforms = configured_platforms(settings)
    if not platforms:
        lines.append(f"no bot configured: only `skillgate chat` talks to it; {INIT} adds one")
    lines.extend(platform.banner(settings) for platform in platforms)
    if settings.admins():
        local = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
        base = settings.public_url or f"http://{local}:{port}"
        lines.append(f"admin console: {base}/admin/ (sign in with SKILLGATE_ADMIN_TOKEN)")
    else:
        lines.append(
            "admin console: off; set SKILLGATE_ADMIN_TOKEN to turn it on"
            " (`skillgate doctor --fix` generates one into .env)"
        )
    lines.append("`skillgate doctor` checks everything; Ctrl-C stops")
    if (mine := unfound_command()) is not None:
        lines.append(
            f"`skillgate` is not on this shell's PATH: type {mine} for the commands named here,"
            f' or `export PATH="{mine.parent}:$PATH"`'
        )
    return lines


def unfound_command() -> Path | None:
    """This install's `skillgate` when the shell would not find it by name (else None)."""
    mine = Path(sys.executable).parent / "skillgate"
    if not mine.exists():
        return None  # run from the source tree (`python -m gateway.cli`): nothing to type
    found = shutil.which("skillgate")
    if found is not None and Path(found).resolve() == mine.resolve():
        return None
    return mine
