"""Load: 200 Telegram webhooks a second over 500 chats, a zero-latency model.

Nothing lost, nothing sent twice, every chat answered in order; the webhook-to-send
latency (from posting the update to its answer's sendMessage reaching the fake Bot API)
is printed with the rates actually achieved. Telegram's own pacing (30 messages a second
overall, one a second per chat) is lifted: under test is the gateway, not the platform's
limits. Marked `load`: `pytest -m load -s` runs it (CI does, as a separate step). It lasts
15 s by default so the step stays within two minutes on a 2-core machine, where the fakes
and this generator share the gateway's process; RELIABILITY_LOAD_SECONDS and
RELIABILITY_LOAD_RATE change the length and the rate (30 and 200 for the full run).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import pytest

from gateway.config import Settings
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import make_text_update
from tests.telegram_harness import Gateway, telegram_gateway

RATE = int(os.environ.get("RELIABILITY_LOAD_RATE", "200"))
SECONDS = int(os.environ.get("RELIABILITY_LOAD_SECONDS", "15"))
CHATS = 500
IN_FLIGHT = 256
"""Most webhook requests open at once, as a platform's connection limit would allow."""


def echo(body: dict[str, Any]) -> str:
    return f"re: {body['messages'][-1]['content']}"


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def post_stream(gw: Gateway, posted: dict[str, float]) -> tuple[float, list[int]]:
    """Post RATE updates a second for SECONDS; returns the seconds it took and any non-200s."""
    limit = asyncio.Semaphore(IN_FLIGHT)
    failures: list[int] = []

    async def post(n: int) -> None:
        chat = n % CHATS
        text = f"c{chat}-{n // CHATS}"
        update = make_text_update(n + 1, text, chat_id=10_000 + chat, user_id=10_000 + chat)
        async with limit:
            posted[text] = time.monotonic()
            resp = await gw.post(update)
            if resp.status != 200:
                failures.append(resp.status)

    started = time.monotonic()
    tasks = []
    for n in range(RATE * SECONDS):
        delay = started + n / RATE - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(post(n)))
    await asyncio.gather(*tasks)
    return time.monotonic() - started, failures


@pytest.mark.load
async def test_a_stream_of_200_updates_a_second_is_answered_once_each_in_chat_order(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.default = echo
    total = RATE * SECONDS
    async with telegram_gateway(
        make_settings,
        fake_llm,
        channel_options={"typing_interval": 60},
        telegram_max_messages_per_second=0,  # Telegram's 30/s: see above
    ) as gw:
        posted: dict[str, float] = {}
        took, failures = await post_stream(gw, posted)
        async with asyncio.timeout(SECONDS * 4 + 60):
            while len([c for c in gw.fake.calls_of("sendMessage") if c.status == 200]) < total:
                await asyncio.sleep(0.1)
        await gw.idle(30)
        sends = [c for c in gw.fake.calls_of("sendMessage") if c.status == 200]
        finished = max(c.at for c in sends) - min(posted.values())

    answered: dict[int, list[str]] = defaultdict(list)
    latencies = []
    for call in sends:
        text = str(call.params["text"]).removeprefix("re: ")
        answered[int(call.params["chat_id"]) - 10_000].append(text)
        latencies.append(call.at - posted[text])
    texts = [t for chat in answered.values() for t in chat]
    lost, duplicated = total - len(set(texts)), len(texts) - len(set(texts))
    print(
        f"\nload: {total} updates over {CHATS} chats posted in {took:.1f} s"
        f" ({total / took:.0f}/s, target {RATE}/s), all answered after {finished:.1f} s"
        f" ({total / finished:.0f}/s); lost {lost}, duplicated {duplicated};"
        f" webhook to send p50 {statistics.median(latencies) * 1000:.0f} ms,"
        f" p99 {percentile(latencies, 0.99) * 1000:.0f} ms,"
        f" max {max(latencies) * 1000:.0f} ms"
    )
    assert failures == []
    assert lost == 0 and duplicated == 0
    for chat, got in answered.items():
        assert got == [f"c{chat}-{seq}" for seq in range(len(got))], chat
