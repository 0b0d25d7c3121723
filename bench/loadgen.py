"""The load: Telegram webhook POSTs at a fixed rate or flat out, and the answers they cause."""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import aiohttp

from tests.fakes.telegram_api import make_text_update

QUESTIONS = (
    "how do I renew my passport before a trip?",
    "what is a good bread recipe for beginners?",
    "why does my printer say it is offline?",
    "can you explain compound interest with an example?",
)


@dataclass
class Batch:
    """Updates ready to post: their keys and pre-serialised bodies."""

    keys: list[str]
    bodies: list[bytes]


def make_batch(phase: int, count: int, chats: int, first_update_id: int) -> Batch:
    """`count` text updates, round-robin over `chats` private chats unique to this phase."""
    keys, bodies = [], []
    for i in range(count):
        key = f"q{phase}-{i}"
        # Fresh chats every phase, so every round starts from empty sessions.
        chat = phase * 1_000_000 + 1 + i % chats
        text = f"{key} {QUESTIONS[i % len(QUESTIONS)]}"
        update = make_text_update(first_update_id + i, text, chat_id=chat, user_id=chat)
        keys.append(key)
        bodies.append(json.dumps(update).encode())
    return Batch(keys, bodies)


@dataclass
class Sent:
    """When each update was posted and how the webhook answered."""

    at: dict[str, float] = field(default_factory=dict)
    statuses: Counter[int | str] = field(default_factory=Counter)

    @property
    def first(self) -> float:
        return min(self.at.values())


class Poster:
    """Posts webhooks to one contender over a bounded pool of connections.

    A contender of several replicas has several URLs: the updates alternate between them.
    """

    def __init__(self, urls: list[str], secret: str, connections: int) -> None:
        self.urls = urls
        self.headers = {
            "Content-Type": "application/json",
            "X-Telegram-Bot-Api-Secret-Token": secret,
        }
        self.connections = connections
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> Poster:
        connector = aiohttp.TCPConnector(limit=self.connections)
        self._session = aiohttp.ClientSession(connector=connector)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()

    async def _post(self, key: str, body: bytes, sent: Sent) -> None:
        assert self._session is not None
        url = self.urls[len(sent.at) % len(self.urls)]
        sent.at[key] = time.monotonic()
        try:
            async with self._session.post(url, data=body, headers=self.headers) as resp:
                await resp.read()
                sent.statuses[resp.status] += 1
        except (aiohttp.ClientError, TimeoutError) as exc:
            sent.statuses[type(exc).__name__] += 1

    async def at_rate(self, batch: Batch, rate: float) -> Sent:
        """Open loop: update i is posted at start + i/rate, whether earlier ones finished or not."""
        sent = Sent()
        tasks = []
        start = time.monotonic() + 0.01
        for i, (key, body) in enumerate(zip(batch.keys, batch.bodies, strict=True)):
            delay = start + i / rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(self._post(key, body, sent)))
        await asyncio.gather(*tasks)
        return sent

    async def flat_out(self, batch: Batch) -> Sent:
        """As fast as the connection pool allows (Telegram's own default is 40 connections)."""
        sent = Sent()
        await asyncio.gather(
            *(self._post(k, b, sent) for k, b in zip(batch.keys, batch.bodies, strict=True))
        )
        return sent


async def post_all(
    url: str, bodies: list[bytes], headers: Callable[[bytes], dict[str, str]], connections: int
) -> Counter[int | str]:
    """POST every body as fast as `connections` allow; how many got each status."""
    statuses: Counter[int | str] = Counter()
    connector = aiohttp.TCPConnector(limit=connections)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def post(body: bytes) -> None:
            try:
                async with session.post(url, data=body, headers=headers(body)) as resp:
                    await resp.read()
                    statuses[resp.status] += 1
            except (aiohttp.ClientError, TimeoutError) as exc:
                statuses[type(exc).__name__] += 1

        await asyncio.gather(*(post(b) for b in bodies))
    return statuses


class Answers:
    """Reads, through the fake Bot API's control port, which answers arrived and when."""

    def __init__(self, control: str) -> None:
        self.control = control

    async def count(self, session: aiohttp.ClientSession) -> int:
        """Answers received so far."""
        async with session.get(f"{self.control}/count") as resp:
            return int((await resp.json())["sent"])

    async def wait(self, session: aiohttp.ClientSession, expected: int, stall: float) -> int:
        """Wait until `expected` answers arrived, or none arrived for `stall` seconds."""
        last, last_change = -1, time.monotonic()
        while True:
            count = await self.count(session)
            if count >= expected:
                return count
            if count != last:
                last, last_change = count, time.monotonic()
            elif time.monotonic() - last_change > stall:
                return count
            await asyncio.sleep(0.05)

    async def drain(self, session: aiohttp.ClientSession) -> tuple[dict[str, float], Counter[str]]:
        """Arrival time per key, and how many calls of each Bot API method were made."""
        async with session.post(f"{self.control}/drain") as resp:
            data = await resp.json()
        arrivals: dict[str, float] = {}
        for key, _chat, at in data["arrivals"]:
            if key:  # a duplicate answer counts from the first copy
                arrivals[key] = min(at, arrivals.get(key, at))
        return arrivals, Counter(data["methods"])
