"""`skillgate serve` as a process a test can kill: started, SIGKILLed, started again."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

import aiohttp

from tests.serve_process import TEST_DEFAULTS, free_port


class Server:
    """One `skillgate serve` process on a fresh port."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self, ready_within: float = 30.0) -> None:
        """Start and wait for /healthz."""
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "gateway.cli", "serve", "--port", str(self.port),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
            env={**os.environ, **TEST_DEFAULTS, **self.env},
        )  # fmt: skip
        async with asyncio.timeout(ready_within):
            while await self.health() is None:
                assert self.proc.returncode is None, "skillgate serve exited"
                await asyncio.sleep(0.1)

    async def health(self) -> dict[str, Any] | None:
        """/healthz, or None while nothing listens."""
        try:
            async with (
                aiohttp.ClientSession() as http,
                http.get(f"{self.url}/healthz") as resp,
            ):
                body: dict[str, Any] = await resp.json()
                return body
        except aiohttp.ClientConnectionError:
            return None

    async def kill(self) -> None:
        """SIGKILL: no shutdown code runs, as in a power cut of the process."""
        assert self.proc is not None
        self.proc.kill()
        await self.proc.wait()

    async def stop(self) -> int:
        """SIGTERM and wait; the exit status."""
        assert self.proc is not None
        if self.proc.returncode is None:
            self.proc.terminate()
        return await asyncio.wait_for(self.proc.wait(), 30)
