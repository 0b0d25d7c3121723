"""The fake Bot API and the fake model as child processes, each with a small control port.

    python -m bench.fakes telegram [--lean]   # fake Bot API; records when each answer arrives
    python -m bench.fakes line                # fake LINE Messaging API
    python -m bench.fakes openai [--delay S]  # model that echoes the last message (after S s)
    python -m bench.fakes openai --tokens N --token-interval S  # ... then streams N more words

Each prints one JSON line (its base URL and control URL) once it listens and runs until
its stdin closes. The control port answers GET /count (answers received so far) and
POST /drain (hands over the arrival records and forgets them); LINE's also hands out
reply tokens (POST /tokens?n=N). The Bot API's POST /drain?calls=1 also hands over every
call (method, chat, time, status); the model's /drain, when each streamed answer's first
word went out.

`telegram` is the project's recording fake (tests/fakes/telegram_api.py); `--lean` is a
minimal handler that answers the same calls, to check the recording fake is not the
bottleneck.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import re
import time
from collections import Counter
from typing import Any

from aiohttp import web

from bench.procs import announce, until_told_to_stop
from tests.fakes.line_api import FakeLineAPI
from tests.fakes.openai_server import FakeOpenAI, Scripted
from tests.fakes.telegram_api import FakeTelegramAPI

TOKEN = "123456:BENCH-TOKEN"
LINE_TOKEN = "bench-line-access-token"
KEY = re.compile(r"q\d+-\d+")
"""Every benchmark update's text carries a unique key, which the echoing model repeats."""

Arrival = tuple[str, int, float]
CallRecord = tuple[str, int, float, int | None]


def echo(body: dict[str, Any]) -> str:
    """The fake model's answer: the last message, repeated (so the key travels along)."""
    return f"Re: {body['messages'][-1]['content']}"


def arrival(params: dict[str, Any], at: float) -> Arrival:
    found = KEY.search(str(params.get("text", "")))
    return (found.group(0) if found else "", int(params.get("chat_id") or 0), at)


class RecordingAPI:
    """FakeTelegramAPI, read out through the control port."""

    def __init__(self) -> None:
        self.fake = FakeTelegramAPI(token=TOKEN, bot_username="bench_bot")

    async def start(self) -> str:
        await self.fake.start()
        return self.fake.base_url

    def count(self) -> int:
        return sum(1 for c in self.fake.calls if c.method == "sendMessage" and c.status == 200)

    def drain(self) -> tuple[list[Arrival], Counter[str]]:
        sent, methods, _calls = self.drain_calls()
        return sent, methods

    def drain_calls(self) -> tuple[list[Arrival], Counter[str], list[CallRecord]]:
        calls, self.fake.calls = self.fake.calls, []
        self.fake.messages.clear()
        methods = Counter(c.method for c in calls)
        sent = [
            arrival(c.params, c.at) for c in calls if c.method == "sendMessage" and c.status == 200
        ]
        records = [(c.method, int(c.params.get("chat_id") or 0), c.at, c.status) for c in calls]
        return sent, methods, records


class LeanAPI:
    """Just enough Bot API to answer getMe, sendMessage and the calls a bot makes at start."""

    def __init__(self) -> None:
        self.arrivals: list[Arrival] = []
        self.methods: Counter[str] = Counter()
        self._ids = itertools.count(1)
        self._runner: web.AppRunner | None = None

    async def start(self) -> str:
        app = web.Application()
        app.router.add_post("/bot{token}/{method}", self.handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        return f"http://127.0.0.1:{self._runner.addresses[0][1]}/bot"

    async def handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params = dict(await request.post())
        self.methods[method] += 1
        if method == "getMe":
            result: Any = {"id": 123456, "is_bot": True, "first_name": "Bench", "username": "b"}
        elif method == "sendMessage":
            self.arrivals.append(arrival(params, time.monotonic()))
            result = {
                "message_id": next(self._ids),
                "date": int(time.time()),
                "chat": {"id": int(str(params["chat_id"])), "type": "private"},
                "text": params.get("text", ""),
            }
        else:
            result = True
        return web.json_response({"ok": True, "result": result})

    def count(self) -> int:
        return len(self.arrivals)

    def drain(self) -> tuple[list[Arrival], Counter[str]]:
        sent, self.arrivals = self.arrivals, []
        methods, self.methods = self.methods, Counter()
        return sent, methods


async def control(routes: list[web.RouteDef]) -> tuple[web.AppRunner, str]:
    app = web.Application()
    app.router.add_routes(routes)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner, f"http://127.0.0.1:{runner.addresses[0][1]}"


async def serve_telegram(lean: bool) -> None:
    api: RecordingAPI | LeanAPI = LeanAPI() if lean else RecordingAPI()
    base_url = await api.start()

    async def count(_request: web.Request) -> web.Response:
        return web.json_response({"sent": api.count()})

    async def drain(request: web.Request) -> web.Response:
        if request.query.get("calls") and isinstance(api, RecordingAPI):
            sent, methods, calls = api.drain_calls()
            return web.json_response({"arrivals": sent, "methods": methods, "calls": calls})
        sent, methods = api.drain()
        return web.json_response({"arrivals": sent, "methods": methods})

    runner, url = await control([web.get("/count", count), web.post("/drain", drain)])
    announce(base_url=base_url, control=url, token=TOKEN)
    await until_told_to_stop()
    await runner.cleanup()


async def serve_line() -> None:
    fake = FakeLineAPI(access_token=LINE_TOKEN)
    fake.quota_limit = 10**9  # pushes are not what is measured
    await fake.start()

    async def count(_request: web.Request) -> web.Response:
        return web.json_response({"sent": len(fake.delivered_messages())})

    async def tokens(request: web.Request) -> web.Response:
        n = int(request.query.get("n", "1"))
        return web.json_response([fake.issue_reply_token(300) for _ in range(n)])

    async def drain(_request: web.Request) -> web.Response:
        count = len(fake.calls)
        fake.calls.clear()
        return web.json_response({"calls": count})

    routes = [web.get("/count", count), web.post("/tokens", tokens), web.post("/drain", drain)]
    runner, url = await control(routes)
    announce(base_url=fake.base_url, control=url, token=LINE_TOKEN)
    await until_told_to_stop()
    await runner.cleanup()
    await fake.close()


async def serve_openai(delay: float, tokens: int = 0, interval: float = 0.0) -> None:
    fake = FakeOpenAI()
    fake.chunk_interval = interval
    words = "".join(f" w{i}" for i in range(tokens))
    if delay or tokens:
        fake.default = lambda body: Scripted(text=echo(body) + words, delay=delay)
    else:
        fake.default = echo
    await fake.start()

    async def drain(_request: web.Request) -> web.Response:
        count, fake.requests = len(fake.requests), []
        firsts, fake.first_chunks = fake.first_chunks, []
        keyed = [(found.group(0), at) for at, text in firsts if (found := KEY.search(text))]
        return web.json_response({"requests": count, "first_chunks": keyed})

    runner, url = await control([web.post("/drain", drain)])
    announce(base_url=fake.base_url, control=url)
    await until_told_to_stop()
    await runner.cleanup()
    await fake.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("which", choices=["telegram", "line", "openai"])
    parser.add_argument("--lean", action="store_true", help="minimal Bot API handler")
    parser.add_argument("--delay", type=float, default=0.0, help="model latency, seconds")
    parser.add_argument("--tokens", type=int, default=0, help="words streamed after the echo")
    parser.add_argument("--token-interval", type=float, default=0.0, help="seconds per word")
    args = parser.parse_args()
    if args.which == "openai":
        asyncio.run(serve_openai(args.delay, args.tokens, args.token_interval))
    elif args.which == "line":
        asyncio.run(serve_line())
    else:
        asyncio.run(serve_telegram(args.lean))


if __name__ == "__main__":
    main()
