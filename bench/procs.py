"""Servers as child processes: start, wait until ready, read their CPU time and memory, stop."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Self

import aiohttp
from aiohttp import web

_TICK = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def machine_busy_seconds() -> float:
    """CPU time every process on the machine has used since boot, all cores (Linux /proc)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[:8])
    return (user + nice + system + irq + softirq + steal) / _TICK


def rss_mb(pid: int) -> float:
    """Resident memory of a process (VmRSS) in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


class Child:
    """One child process, its stderr kept in a log file for the post-mortem."""

    def __init__(
        self,
        name: str,
        argv: list[str],
        log_dir: Path,
        *,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> None:
        self.name = name
        self.log = log_dir / f"{name}.log"
        self.started_at = time.monotonic()
        # stdin stays open: the bench's own helpers exit when it closes, so none outlives us.
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log.open("wb"),
            env={**os.environ, **(env or {})},
            cwd=cwd,
        )

    @classmethod
    def python(cls, name: str, module: str, *args: str, log_dir: Path, **kw: Any) -> Self:
        """Run `python -m module args` with this interpreter."""
        return cls(name, [sys.executable, "-m", module, *args], log_dir, **kw)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def ready_line(self, timeout: float = 30.0) -> dict[str, Any]:
        """The JSON line a bench helper prints once it listens."""
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else b""
        if not line:
            raise RuntimeError(f"{self.name} did not start; see {self.log}:\n{self.tail()}")
        info: dict[str, Any] = json.loads(line)
        return info

    def cpu(self) -> float:
        return cpu_seconds(self.pid)

    def rss(self) -> float:
        return rss_mb(self.pid)

    def tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM (a clean shutdown), then SIGKILL if it does not end in time."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()


async def wait_healthy(url: str, child: Child, timeout: float = 30.0) -> float:
    """Poll GET url every 10 ms until it answers 200; seconds since the child was started."""
    deadline = time.monotonic() + timeout
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            if child.proc.poll() is not None:
                raise RuntimeError(f"{child.name} exited; see {child.log}:\n{child.tail()}")
            try:
                async with session.get(url) as resp:
                    if resp.status == 200:
                        return time.monotonic() - child.started_at
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.01)
    raise RuntimeError(f"{child.name} not healthy after {timeout} s; see {child.log}")


async def until_told_to_stop() -> None:
    """Return on SIGTERM or when the parent closes our stdin (so a helper never outlives it)."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)

    def read_to_eof() -> None:
        sys.stdin.buffer.read()
        loop.call_soon_threadsafe(stop.set)

    # A daemon thread, so a blocked read never holds up the exit.
    threading.Thread(target=read_to_eof, daemon=True).start()
    await stop.wait()


def announce(**info: Any) -> None:
    """Tell the parent we are ready, as one JSON line on stdout."""
    print(json.dumps(info), flush=True)


def run_contender(make_app: Callable[[str, str, str, str], web.Application], doc: str) -> None:
    """Command line of a contender bot: serve `make_app(llm, api, token, secret)` on --port."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    for name in ("llm", "api", "token", "secret"):
        parser.add_argument(f"--{name}", required=True)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()

    async def serve() -> None:
        app = make_app(args.llm, args.api, args.token, args.secret)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", args.port).start()
        announce(url=f"http://127.0.0.1:{args.port}")
        await until_told_to_stop()
        await runner.cleanup()

    asyncio.run(serve())


def skillgate_serve(name: str, port: int, settings: dict[str, str], workdir: Path) -> Child:
    """`skillgate serve` on 127.0.0.1:port with exactly these settings (none inherited)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_SETTING_PREFIXES)}
    env.update(settings)
    script = Path(sys.executable).with_name("skillgate")
    argv = [str(script)] if script.exists() else [sys.executable, "-m", "gateway.cli"]
    argv += ["serve", "--host", "127.0.0.1", "--port", str(port)]
    # Its own working directory, so no .env of the checkout is read.
    return Child(name, argv, workdir, env=env, cwd=workdir)


_SETTING_PREFIXES = ("SKILLGATE_", "TELEGRAM_", "LINE_", "LLM_")
