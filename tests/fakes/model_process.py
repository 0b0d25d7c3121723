"""A model's server as a child process, for the supervisor's tests: llama.cpp's shape.

`python tests/fakes/model_process.py SOCKET [DIE_FILE]` serves `/health` ({"status": "ok"}),
`/v1/models` and a whole (not streamed) `/v1/chat/completions` on the unix socket SOCKET (a
path; a number is a loopback TCP port, for a process squatting where a port used to be), and
ends when its stdin closes, as the real child does. Each answer names its pid; with
FAKE_MODEL_LOG set, every chat request's body is appended to that file (what a process in
the model's place was sent). When DIE_FILE exists at start, it exits at once with status 3
and says so on stderr: a model that can no longer start.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

from aiohttp import web


async def health(_request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


async def models(_request: web.Request) -> web.Response:
    return web.json_response({"object": "list", "data": [{"id": "fake-local", "object": "model"}]})


async def chat(request: web.Request) -> web.Response:
    body = await request.text()
    if log := os.environ.get("FAKE_MODEL_LOG"):
        with open(log, "a", encoding="utf-8") as out:
            out.write(body + "\n")
    return web.json_response(
        {
            "id": "c1",
            "object": "chat.completion",
            "model": "fake-local",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": f"answered by {os.getpid()}"},
                    "finish_reason": "stop",
                }
            ],
        }
    )


def main() -> None:
    where = sys.argv[1]
    if len(sys.argv) > 2 and Path(sys.argv[2]).exists():
        print("the model file is gone", file=sys.stderr)
        sys.exit(3)

    def leave_at_eof() -> None:
        sys.stdin.buffer.read()
        os._exit(0)

    threading.Thread(target=leave_at_eof, daemon=True).start()
    app = web.Application()
    app.router.add_get("/health", health)
    app.router.add_get("/v1/models", models)
    app.router.add_post("/v1/chat/completions", chat)
    if where.isdigit():
        web.run_app(app, host="127.0.0.1", port=int(where), print=None, access_log=None)
    else:
        web.run_app(app, path=where, print=None, access_log=None)


if __name__ == "__main__":
    main()
