"""Graceful shutdown: an answer in flight is still delivered, within the configured timeout."""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web

from gateway.app import PARTS, build_app
from gateway.config import Settings
from gateway.store import SqliteStore
from tests.fakes.channel import FakeChannel
from tests.fakes.openai_server import FakeOpenAI


async def test_an_answer_in_flight_is_delivered_when_the_app_stops(
    settings: Settings, fake_llm: FakeOpenAI
) -> None:
    fake_llm.stall(0.5)  # the model answers "too late" after half a second
    channel = FakeChannel(settings)
    runner = web.AppRunner(build_app(settings, channels=[channel]))
    await runner.setup()
    await channel.accept("1", "c1", "hello")
    await fake_llm.wait_for_requests(1)
    await runner.cleanup()  # what SIGTERM does, while the model is still thinking

    assert channel.texts() == ["too late"]
    async with SqliteStore(settings.db_path) as store:
        assert await store.inbox_pending_count() == 0


async def test_a_turn_longer_than_the_timeout_resumes_at_the_next_start(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = make_settings(
        llm_base_url=fake_llm.base_url, llm_model="fake-model", shutdown_timeout_seconds=0.1
    )
    fake_llm.stall(1.0)
    channel = FakeChannel(settings)
    runner = web.AppRunner(build_app(settings, channels=[channel]))
    await runner.setup()
    await channel.accept("1", "c1", "hello")
    await fake_llm.wait_for_requests(1)
    await runner.cleanup()
    assert channel.texts() == []

    fake_llm.reply("Here I am.")
    again = FakeChannel(settings)
    runner = web.AppRunner(build_app(settings, channels=[again]))
    await runner.setup()
    try:
        await again.wait_sent(1)
        await runner.app[PARTS].worker.wait_idle(5)
        assert again.texts() == ["Here I am."]
    finally:
        await runner.cleanup()
