"""The server's own limits, over real sockets: slow heads and bodies, too many connections."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import aiohttp

from gateway.app import build_app
from gateway.config import Settings
from gateway.logs import Throttle, make_handler
from gateway.web import serving
from tests.fakes.line_api import FakeLineAPI
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegramAPI, make_text_update
from tests.line_support import line_settings
from tests.telegram_harness import SECRET as TELEGRAM_SECRET

LIMITS = serving.Limits(head_seconds=0.5, body_seconds=0.5, max_connections=6)


@asynccontextmanager
async def served(settings: Settings) -> AsyncIterator[int]:
    runner, _ = await serving.start(
        build_app(settings, channels=None), "127.0.0.1", 0, limits=LIMITS
    )
    try:
        port = runner.addresses[0][1]
        yield port
    finally:
        await runner.cleanup()


async def closed_within(reader: asyncio.StreamReader, seconds: float) -> bytes:
    """What the server sent before it closed the connection (fails if it stays open)."""
    return await asyncio.wait_for(reader.read(), seconds)


async def test_a_head_sent_too_slowly_is_cut_off(settings: Settings) -> None:
    async with served(settings) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # and never the blank line
        started = time.monotonic()
        assert await closed_within(reader, 3) == b""
        assert time.monotonic() - started < 2
        writer.close()


async def test_a_body_sent_too_slowly_is_answered_408(settings: Settings) -> None:
    async with served(settings) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(
            b"POST /admin/api/proposals/1/reject HTTP/1.1\r\nHost: x\r\n"
            b'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"reason"'
        )
        answer = await closed_within(reader, 3)
        assert answer.startswith(b"HTTP/1.1 408")
        writer.close()


async def test_slow_senders_cannot_crowd_out_health_checks(settings: Settings) -> None:
    async with served(settings) as port:
        held = []
        for _ in range(LIMITS.max_connections * 3):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET /healthz HTTP/1.1\r\n")
            held.append((reader, writer))
        async with aiohttp.ClientSession() as http:
            started = time.monotonic()
            async with http.get(f"http://127.0.0.1:{port}/healthz") as resp:
                assert resp.status == 200
            assert time.monotonic() - started < 1
        # The oldest slow senders were closed to make room; at most the limit stays open.
        await asyncio.sleep(0.05)
        still_open = sum(1 for reader, _ in held if not reader.at_eof())
        assert still_open <= LIMITS.max_connections
        for _, writer in held:
            writer.close()


async def test_the_line_webhook_reads_a_body_only_within_the_deadline(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with FakeLineAPI() as fake:
        settings = line_settings(make_settings, fake_llm, fake)
        async with served(settings) as port:
            head = (
                b"POST /webhook/line HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: 1000\r\n"
            )
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(head + b"\r\n{")  # no signature: refused without waiting for the body
            started = time.monotonic()
            answer = await asyncio.wait_for(reader.readline(), 2)
            assert answer.startswith(b"HTTP/1.1 401") and time.monotonic() - started < 0.4
            writer.close()
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(head + b"X-Line-Signature: c2lnbmF0dXJl\r\n\r\n{")
            assert (await closed_within(reader, 3)).startswith(b"HTTP/1.1 408")
            writer.close()


def test_a_line_logged_over_and_over_is_thinned_and_counted() -> None:
    now = [0.0]
    stream = io.StringIO()
    handler = make_handler(stream=stream)
    throttle = Throttle(burst=3, window=60.0, clock=lambda: now[0])
    handler.filters = [f for f in handler.filters if not isinstance(f, Throttle)] + [throttle]
    logger = logging.getLogger("tests.flood")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        for i in range(1000):
            logger.warning("refused a connection from %s", f"10.0.0.{i % 250}")
        logger.warning("another message")
        now[0] = 61.0
        logger.warning("refused a connection from %s", "10.0.0.1")
    finally:
        logger.removeHandler(handler)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 5
    assert "another message" in lines[3]
    assert "997 more like this were not logged" in lines[4]


def test_the_shipped_handler_thins_floods() -> None:
    stream = io.StringIO()
    handler = make_handler(stream=stream)
    logger = logging.getLogger("tests.flood2")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        for _ in range(5000):
            logger.error("socket.accept() out of system resource")
    finally:
        logger.removeHandler(handler)
    assert len(stream.getvalue().splitlines()) <= 20


async def test_a_telegram_update_is_read_whole_however_its_body_arrives(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with FakeTelegramAPI() as fake:
        settings = make_settings(
            telegram_bot_token=fake.token,
            telegram_webhook_secret=TELEGRAM_SECRET,
            telegram_api_base_url=fake.base_url,
            telegram_max_messages_per_second=0,
            llm_base_url=fake_llm.base_url,
            llm_model="fake-model",
        )
        body = json.dumps(make_text_update(1, "in two pieces")).encode()
        head = (
            b"POST /webhook/telegram HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"X-Telegram-Bot-Api-Secret-Token: {TELEGRAM_SECRET}\r\n".encode()
        )
        async with served(settings) as port:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(head + f"Content-Length: {len(body)}\r\n\r\n".encode() + body[:10])
            await writer.drain()
            writer.write(body[10:])  # the rest in a second write
            assert (await asyncio.wait_for(reader.readline(), 3)).startswith(b"HTTP/1.1 200")
            writer.close()
            await fake.wait_for("sendMessage")
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(head + b"Content-Length: 1000\r\n\r\n{")  # and never the rest
            assert (await closed_within(reader, 3)).startswith(b"HTTP/1.1 408")
            writer.close()
        assert fake.sent_texts(1001) == ["Hello from the fake model."]
