"""What one flooding tool result costs the gateway: CPU seconds and memory, per transport.

    python -m bench.tool_flood [--sizes 10 20 40] [--transport stdio sse json]

Each size runs in a fresh interpreter (peak RSS is per process): an MCP server written
with the SDK (`flood(mb)` returns that many MB of text) runs as a child, over stdio or
Streamable HTTP on loopback (the call answered as an SSE stream or as one JSON body); the
gateway's `McpServer` starts it and calls `flood` once. Printed per size: the outcome,
wall seconds, this process's CPU seconds for the call (the server's own are not counted)
and how far its peak RSS rose during the call.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from tempfile import TemporaryDirectory

SERVER = textwrap.dedent(
    """
    import sys
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("flood")

    @server.tool()
    def flood(mb: int) -> str:
        "That many megabytes of text."
        return "x" * (mb * 1024 * 1024)

    if sys.argv[1] == "stdio":
        server.run("stdio")
    else:
        import uvicorn
        app = server.streamable_http_app(json_response=sys.argv[1] == "json")
        uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
    """
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _one(transport: str, mb: int, folder: Path) -> dict[str, object]:
    from gateway.tools.config import ServerConfig
    from gateway.tools.mcp_client import McpServer

    script = folder / "flood.py"
    script.write_text(SERVER, encoding="utf-8")
    child: subprocess.Popen[bytes] | None = None
    if transport == "stdio":
        config = ServerConfig(command=sys.executable, args=[str(script), "stdio"], trusted=True)
    else:
        port = _free_port()
        child = subprocess.Popen([sys.executable, str(script), transport, str(port)])
        for _ in range(300):
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.1):
                    break
            except OSError:
                await asyncio.sleep(0.05)
        config = ServerConfig(url=f"http://127.0.0.1:{port}/mcp", trusted=True)
    server = McpServer("flood", config, secrets=(), timeout=30)
    try:
        await server.start()
        assert server.alive, server.error
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        cpu_before = time.process_time()
        wall_before = time.monotonic()
        try:
            async with asyncio.timeout(120):
                text, _ = await server.call("flood", {"mb": mb})
            outcome = f"read {len(text):,} characters"
        except Exception as exc:
            outcome = f"{type(exc).__name__}: {exc}"[:160]
        wall = time.monotonic() - wall_before
        cpu = time.process_time() - cpu_before
        rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    finally:
        await server.stop()
        if child is not None:
            child.terminate()
            child.wait()
    return {
        "transport": transport,
        "mb": mb,
        "outcome": outcome,
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "peak_rss_rise_mib": round((rss_after - rss_before) / 1024, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 20, 40])
    parser.add_argument("--transport", nargs="+", default=["stdio", "sse", "json"])
    parser.add_argument("--one", nargs=2, metavar=("TRANSPORT", "MB"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        with TemporaryDirectory() as folder:
            row = asyncio.run(_one(args.one[0], int(args.one[1]), Path(folder)))
        print(json.dumps(row))
        return
    for transport in args.transport:
        for mb in args.sizes:
            run = subprocess.run(
                [sys.executable, "-m", "bench.tool_flood", "--one", transport, str(mb)],
                capture_output=True,
                text=True,
                check=True,
            )
            print(run.stdout.strip().splitlines()[-1], flush=True)


if __name__ == "__main__":
    main()
