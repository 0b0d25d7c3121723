"""The `skillgate` command as a real process: one-shot commands, and `serve` until /healthz."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import aiohttp

TEST_DEFAULTS = {"SKILLGATE_TRIAL_TURNS_PER_SIDE": "0"}
"""What every test's settings default to (as conftest's `make_settings`): a trial answers
rated turns again, calls a test of something else did not script; tests of it ask for it."""


def free_port() -> int:
    """A loopback port nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def skillgate(
    *args: str, env: dict[str, str], stdin: str | None = None, timeout: float = 30
) -> tuple[int, str, str]:
    """Run `skillgate ARGS` to completion; returns exit status, stdout and stderr."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "gateway.cli",
        *args,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **TEST_DEFAULTS, **env},
    )
    out, err = await asyncio.wait_for(
        proc.communicate(stdin.encode() if stdin is not None else None), timeout
    )
    return proc.returncode or 0, out.decode(), err.decode()


@dataclass
class Served:
    """A running server; `stderr` and `returncode` are filled once it has stopped."""

    url: str
    proc: asyncio.subprocess.Process
    health: dict[str, Any] = field(default_factory=dict)
    stderr: str = ""
    returncode: int | None = None


@asynccontextmanager
async def serving(
    *args: str, env: dict[str, str], ready_within: float = 30.0
) -> AsyncIterator[Served]:
    """Run `skillgate serve ARGS` with `env` added until the block ends (then SIGTERM)."""
    port = free_port()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway.cli", "serve", "--port", str(port), *args,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **TEST_DEFAULTS, **env},
    )  # fmt: skip
    served = Served(url=f"http://127.0.0.1:{port}", proc=proc)
    try:
        async with aiohttp.ClientSession() as http:
            deadline = asyncio.get_running_loop().time() + ready_within
            while not served.health:
                if proc.returncode is not None or asyncio.get_running_loop().time() > deadline:
                    raise AssertionError("skillgate serve did not answer /healthz")
                try:
                    async with http.get(f"{served.url}/healthz") as resp:
                        served.health = await resp.json()
                except aiohttp.ClientConnectionError:
                    await asyncio.sleep(0.1)  # not listening yet
        yield served
    finally:
        if proc.returncode is None:
            proc.terminate()
        _, err = await asyncio.wait_for(proc.communicate(), 30)
        served.stderr = err.decode()
        served.returncode = proc.returncode
