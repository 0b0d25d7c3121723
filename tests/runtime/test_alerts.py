"""Admins hear when it breaks: once per incident, in their private chats, in their language."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gateway.config import AlertSettings, Settings
from gateway.runtime.alerts import (
    DISK_LOW,
    MODEL_BACK,
    MODEL_DOWN,
    NO_WEBHOOK,
    SYNTHESIS_FAILING,
    TOOL_BACK,
    TOOL_DOWN,
    AlertWatcher,
    Signals,
    looker,
)
from gateway.store import SqliteStore
from gateway.synthesis.runs import RunRecord
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import make_text_update
from tests.serve_process import free_port
from tests.store_support import current_session
from tests.telegram_harness import telegram_gateway

HOUR = 3600.0


class Told:
    """The alerts as `tell_admins` would get them."""

    def __init__(self) -> None:
        self.said: list[tuple[str, dict[str, Any]]] = []

    async def __call__(self, message: str, ref: str, /, **values: Any) -> None:
        self.said.append((message, values))

    @property
    def messages(self) -> list[str]:
        return [m for m, _ in self.said]


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_an_outage_of_one_minute_reads_as_one() -> None:
    for message in (MODEL_DOWN, MODEL_BACK, TOOL_DOWN, TOOL_BACK):
        text = message.format(minutes=1, error="timed out", fix="restart it", server="toy")
        assert "for 1 min" in text and "1 minutes" not in text, text


async def test_a_dead_model_is_told_once_after_n_minutes_survives_a_restart_and_is_back(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    dead = make_settings(llm_base_url=f"http://127.0.0.1:{free_port()}/v1", llm_model="m")
    clock, told = Clock(), Told()
    limits = AlertSettings(alert_model_minutes=10, alert_disk_mb=0, alert_synthesis_failures=0)
    async with SqliteStore(tmp_path / "alerts.db") as store:
        watcher = AlertWatcher(store, looker(dead, store, 0), told, limits, clock=clock)
        await watcher.tick()
        clock.now += 9 * 60
        await watcher.tick()
        assert told.messages == []  # not yet N minutes
        clock.now += 2 * 60
        await watcher.tick()
        clock.now += 5 * 60
        await watcher.tick()
        assert told.messages == [MODEL_DOWN]
        assert told.said[0][1]["minutes"] == 11
        assert "connection refused" in str(told.said[0][1]["error"])

        # Another replica on the same database leaves the watching to the first.
        looked: list[Signals] = []

        async def look_too() -> Signals:
            looked.append(Signals())
            return looked[-1]

        await AlertWatcher(store, look_too, told, limits, clock=clock).tick()
        assert looked == []

        # A restart: the incident is in the store, so it is not told again.
        await watcher.stop()
        again = AlertWatcher(store, looker(dead, store, 0), told, limits, clock=clock)
        clock.now += 60
        await again.tick()
        assert told.messages == [MODEL_DOWN]
        await again.stop()

        fake = {"llm_base_url": fake_llm.base_url, "llm_model": "fake-model"}
        alive = dead.model_copy(update=fake)
        back = AlertWatcher(store, looker(alive, store, 0), told, limits, clock=clock)
        await back.tick()
        await back.tick()
        assert told.messages == [MODEL_DOWN, MODEL_BACK]
        assert told.said[1][1] == {"minutes": 17}


async def test_disk_synthesis_and_a_silent_webhook_are_each_told_once_until_they_recover(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    settings = make_settings(
        llm_base_url=fake_llm.base_url,
        llm_model="fake-model",
        telegram_bot_token="1:t",
        telegram_webhook_secret="s",
        alert_disk_mb=10_000_000,  # more than any test machine has free
    )
    clock, told = Clock(), Told()
    limits = AlertSettings(
        alert_model_minutes=0,
        alert_webhook_hours=24,
        alert_disk_mb=10_000_000,
        alert_synthesis_failures=2,
    )
    async with SqliteStore(tmp_path / "alerts.db") as store:
        watcher = AlertWatcher(store, looker(settings, store, 2), told, limits, clock=clock)
        await store.inbox_add("telegram", "1", "chat", "{}", clock.now)
        session = await current_session(store, "telegram", "chat", "u", clock.now, 60)
        assert session.id
        for _ in range(2):
            run_id = await store.start_run("schedule", "fake-model", clock.now)
            failed = RunRecord(
                id=run_id, trigger="schedule", status="failed", started_at=clock.now,
                finished_at=clock.now, error="the model's answer is not valid proposal JSON",
            )  # fmt: skip
            await store.finish_run(failed)
        await watcher.tick()
        await watcher.tick()
        assert told.messages == [DISK_LOW, SYNTHESIS_FAILING]
        assert told.said[1][1] == {"n": 2, "error": "the model's answer is not valid proposal JSON"}

        clock.now += 25 * HOUR
        await watcher.tick()
        await watcher.tick()
        assert told.messages[2:] == [NO_WEBHOOK]
        assert told.said[2][1] == {"platform": "telegram", "hours": 25}

        # Updates arrive again and a pass succeeds: both incidents close, silently.
        await store.inbox_add("telegram", "2", "chat", "{}", clock.now)
        ok = await store.start_run("schedule", "fake-model", clock.now)
        await store.finish_run(
            RunRecord(id=ok, trigger="schedule", status="ok", started_at=clock.now,
                      finished_at=clock.now)
        )  # fmt: skip
        await watcher.tick()
        clock.now += 25 * HOUR  # silent again for a day: a new incident, told again
        await watcher.tick()
        assert told.messages[2:] == [NO_WEBHOOK, NO_WEBHOOK]


async def test_an_alert_reaches_the_admins_private_chat_in_their_language(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm, telegram_admin_ids=[4242]) as gw:
        await gw.deliver(make_text_update(1, "/language ja", user_id=4242, chat_id=4242))
        cards = gw.parts.admins.cards
        assert cards is not None
        clock = Clock()
        limits = AlertSettings(alert_model_minutes=1, alert_disk_mb=0, alert_synthesis_failures=0)

        async def look() -> Signals:
            return Signals(model_checked=True, model_error="model unreachable: connection refused")

        watcher = AlertWatcher(gw.parts.store, look, cards.tell_admins, limits, clock=clock)
        await watcher.tick()
        clock.now += 120
        await watcher.tick()
        await watcher.tick()
    alerts = [t for t in gw.fake.sent_texts(4242) if "connection refused" in t]
    assert len(alerts) == 1
    assert alerts[0].startswith("⚠️ モデルが 2 分間失敗しています")


async def test_a_look_cut_short_by_the_shutdown_is_no_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    limits = AlertSettings(alert_model_minutes=1, alert_disk_mb=0, alert_synthesis_failures=0)
    looking = asyncio.Event()

    async def slow_look() -> Signals:
        looking.set()
        await asyncio.Event().wait()  # a model that does not answer before the stop
        return Signals()

    async with SqliteStore(tmp_path / "alerts.db") as store:
        watcher = AlertWatcher(store, slow_look, Told(), limits, clock=Clock())
        tick = asyncio.create_task(watcher.tick())
        await looking.wait()
        tick.cancel()
        await tick  # as the scheduler's executor awaits it: no CancelledError to log
        await watcher.stop()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
