"""PostgreSQL for the webhook benchmark: its own server, a database per contender, its CPU.

`scripts/postgres` starts a throwaway server (loopback only, `fsync=off` as for the tests)
in its own folder on a free port, so the run neither touches nor is slowed by a server
other work uses; `--postgres URL` names an existing server instead. Each contender gets a
fresh database; the two replicas share one. The server's processes (the postmaster and a
backend per pooled connection) are outside the contender's own CPU time, so their CPU is
counted on its own and shown beside it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from bench.procs import _TICK, free_port
from bench.report import median, spread, table

if TYPE_CHECKING:
    from bench.webhook_report import Phase

ROOT = Path(__file__).resolve().parent.parent
CONTENDERS = ("postgres", "replicas")
SERVER = "postgres server"
"""The server's CPU, in each phase's CPU figures beside the contenders'."""
LABELS = {
    "postgres": "skillgate serve, PostgreSQL",
    "replicas": "2 replicas, one PostgreSQL",
}


class Server:
    """A PostgreSQL server for the run: started here (and stopped), or one that was given."""

    def __init__(self, url: str | None) -> None:
        self._folder: Path | None = None
        if url is None:
            # Its own folder under /tmp: the server's user must reach it (not the 0700 scratch).
            self._folder = Path(tempfile.mkdtemp(prefix="skillgate-bench-pg-"))
            self._folder.chmod(0o755)
            env = os.environ | {"SKILLGATE_TEST_POSTGRES_PORT": str(free_port())}
            command = [str(ROOT / "scripts" / "postgres"), "start", str(self._folder)]
            url = subprocess.run(
                command, env=env, check=True, capture_output=True, text=True
            ).stdout.strip()
        self.url = url

    async def database(self, name: str) -> str:
        """The URL of a fresh database `name` on this server."""
        import asyncpg

        conn = await asyncpg.connect(self.url)
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
            await conn.execute(f'CREATE DATABASE "{name}"')
        finally:
            await conn.close()
        return urlunsplit(urlsplit(self.url)._replace(path=f"/{name}"))

    def cpu(self) -> float:
        """CPU seconds of the server's processes alive now (postmaster and its children)."""
        if self._folder is None:
            return 0.0  # a server that was given may serve others: not ours to count
        pid = int((self._folder / "data" / "postmaster.pid").read_text().split()[0])
        total = 0
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue  # ended meanwhile
            if int(fields[1]) == pid or stat.parent.name == str(pid):
                total += int(fields[11]) + int(fields[12])
        return total / _TICK

    def stop(self) -> None:
        if self._folder is not None:
            command = [str(ROOT / "scripts" / "postgres"), "stop", str(self._folder)]
            subprocess.run(command, check=False, capture_output=True)
            shutil.rmtree(self._folder, ignore_errors=True)


def render(flat: dict[str, list[Phase]]) -> str:
    """PostgreSQL beside SQLite: CPU per answer (the gateway's, the server's) and throughput."""
    base = flat["skillgate"]
    sqlite_cpu = median([p.cpu_per_answer("skillgate") for p in base])
    rows = []
    for name in ("skillgate", *CONTENDERS):
        if name not in flat:
            continue
        phases = flat[name]
        own = [p.cpu_per_answer(name) for p in phases]
        sqlite = name == "skillgate"
        server = [0.0 if sqlite else p.cpu_per_answer(SERVER) for p in phases]
        both = [a + b for a, b in zip(own, server, strict=True)]
        rows.append(
            [
                LABELS.get(name, "skillgate serve, SQLite"),
                spread([p.throughput for p in phases], "{:.0f}"),
                spread(
                    [p.throughput / b.throughput for p, b in zip(phases, base, strict=False)],
                    "{:.2f}",
                ),
                spread(own, "{:.2f}"),
                "-" if sqlite else spread(server, "{:.2f}"),
                spread(both, "{:.2f}"),
                f"{median(both) / sqlite_cpu:.2f}",
            ]
        )
    out = table(
        [
            "contender, flat out",
            "answers/s",
            "vs SQLite",
            "gateway CPU ms/answer",
            "PostgreSQL server CPU ms/answer",
            "together",
            "together vs SQLite",
        ],
        rows,
    )
    if "postgres" in flat and "replicas" in flat:
        out += "\n\n" + scaling(flat["postgres"], flat["replicas"])
    return out


REPLICAS_TARGET = 1.3
"""Two replicas on one server answer at least this many times one replica's answers/s."""


def scaling(one: list[Phase], two: list[Phase]) -> str:
    """Two replicas against one on the same server, flat out: answers/s per round."""
    ratios = [b.throughput / a.throughput for a, b in zip(one, two, strict=False)]
    verdict = "met" if median(ratios) >= REPLICAS_TARGET else "MISSED"
    return (
        f"Two replicas against one, flat out: {spread([p.throughput for p in two], '{:.0f}')}"
        f" against {spread([p.throughput for p in one], '{:.0f}')} answers/s,"
        f" **{spread(ratios, '{:.2f}')}x** per round (target at least {REPLICAS_TARGET}x:"
        f" {verdict}). Every process shares this machine's cores with the server, the fakes"
        " and the load generator: the ratio says what a second replica adds here, not on a"
        " host of its own."
    )
