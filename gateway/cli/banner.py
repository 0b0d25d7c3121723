"""What `skillgate serve` says at start after "listening": what works, and what to do next.

Every command it names is written the way this shell runs it: `skillgate ...` when the
shell finds this install's `skillgate` by name, else its full path.
"""

from __future__ import annotations

import sys
from pathlib import Path

from gateway.channels.registry import configured_platforms
from gateway.config import Settings
from gateway.runtime.local_model import TRYING
from gateway.shell import unfound_command

REAL_MODEL = "LLM_BASE_URL and LLM_MODEL (and LLM_API_KEY) in .env"


def next_steps(settings: Settings, host: str, port: int, *, on_board: bool = False) -> list[str]:
    """One line each: the model, the bots, the console; the missing ones say how to add them.

    `on_board`: the model is the on-board default, taken because none is configured.
    """
    mine = unfound_command()
    sg = str(mine) if mine is not None else "skillgate"
    init = f"`{sg} init`"
    lines = []
    if on_board:
        lines.append(
            f"model: {settings.llm_model}, the on-board default ({TRYING}); for a real one run"
            f" `./scripts/init`, or set {REAL_MODEL}"
        )
    elif settings.llm_local_model is not None:
        lines.append(
            f"model: {settings.llm_model} on this machine ({TRYING}); {init} sets up a real one"
        )
    elif settings.model_configured:
        via = f" through {settings.llm_unix_socket}" if settings.llm_unix_socket else ""
        lines.append(f"model: {settings.llm_model} at {settings.llm_base_url}{via}")
    else:
        lines.append(
            f"no model configured: every answer says so; `./scripts/serve` starts the on-board"
            f" one, {init} sets up a real one"
        )
    platforms = configured_platforms(settings)
    if not platforms:
        lines.append(f"no bot configured: only `{sg} chat` talks to it; {init} adds one")
    lines.extend(platform.banner(settings) for platform in platforms)
    if settings.admins():
        local = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
        base = settings.public_url or f"http://{local}:{port}"
        lines.append(f"admin console: {base}/admin/ (sign in with SKILLGATE_ADMIN_TOKEN)")
    else:
        lines.append(
            "admin console: off; set SKILLGATE_ADMIN_TOKEN to turn it on"
            f" (`{sg} doctor --fix` generates one into .env)"
        )
    lines.append(
        f"try it: `{sg} chat` in another terminal; `{sg} doctor` checks everything; Ctrl-C stops"
    )
    if mine is not None:
        lines.append(
            f"`skillgate` is not on this shell's PATH: type {mine} for the commands named here,"
            f' or `export PATH="{mine.parent}:$PATH"`'
        )
    return lines


def show_token(token: str, env_file: Path) -> None:
    """The console's new token, on the terminal once (never in the log)."""
    print(
        f"skillgate: the admin console's token, generated into {env_file} (shown this once):"
        f"\n  {token}",
        file=sys.stderr,
        flush=True,
    )
