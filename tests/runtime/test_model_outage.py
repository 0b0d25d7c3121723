"""An outage looks like one: chat calls that fail while `/models` answers are an incident."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gateway.config import AlertSettings, Settings
from gateway.core.agent import APOLOGY, MODEL_DOWN
from gateway.core.model_health import ModelHealth
from gateway.runtime.alerts import MODEL_BACK, AlertWatcher, looker
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import make_text_update
from tests.runtime.test_alerts import Clock, Told
from tests.telegram_harness import telegram_gateway

LIMITS = AlertSettings(alert_model_minutes=2, alert_disk_mb=0, alert_synthesis_failures=0)


def sent_to(gw: Any, chat: int) -> list[str]:
    return [
        c.params["text"] for c in gw.fake.calls_of("sendMessage") if c.params["chat_id"] == chat
    ]


async def test_chat_calls_failing_while_models_answers_bring_one_alert_and_a_degraded_health(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    clock, told = Clock(), Told()
    async with telegram_gateway(make_settings, fake_llm, llm_max_retries=0) as gw:
        health = gw.parts.health
        assert health is not None
        health.clock = clock
        settings = gw.parts.settings
        watcher = AlertWatcher(
            gw.parts.store,
            looker(settings, gw.parts.store, 0, None, health),
            told,
            LIMITS,
            clock=clock,
        )
        fake_llm.error(500, times=3, message="engine is dead.")
        for n in range(1, 4):
            await gw.deliver(make_text_update(n, f"question {n}", user_id=7, chat_id=7))
            clock.now += 30
        # One failure may pass; once the calls add up to an outage, waiting does not help.
        assert sent_to(gw, 7) == [APOLOGY, APOLOGY, MODEL_DOWN]

        async with gw.client.get("/healthz") as resp:
            assert resp.status == 200
            body = await resp.json()
        assert body["status"] == "degraded"
        assert body["model"]["state"].startswith("failing since ")
        assert "engine is dead" in body["model"]["last_error"]
        assert body["model"]["failed_calls"] == "3 of 3"
        async with gw.client.get("/metrics") as resp:
            scraped = await resp.text()
        assert "skillgate_model_failing 1.0" in scraped
        assert 'skillgate_model_calls_total{outcome="failed"} 3.0' in scraped

        await watcher.tick()
        clock.now += 60
        await watcher.tick()
        await watcher.tick()
        assert len(told.said) == 1  # once per incident, the time counted from the first failure
        message, values = told.said[0]
        assert values["minutes"] == 2 and "3 of the last 3 chat calls failed" in values["error"]
        assert "HTTP 500" in values["error"] and "behind its API" in values["fix"]
        assert "{fix}" in message
        assert not values["error"].endswith(".")  # the message ends the sentence itself

        # A restart forgets the calls but not the incident: no "back" until a call answers.
        fresh = ModelHealth(clock=clock)
        again = AlertWatcher(
            gw.parts.store,
            looker(settings, gw.parts.store, 0, None, fresh),
            told,
            LIMITS,
            clock=clock,
        )
        await watcher.stop()
        await again.tick()
        assert len(told.said) == 1
        fresh.record(None)
        clock.now += 60
        await again.tick()
        await again.tick()
        assert told.messages[1:] == [MODEL_BACK]
        await again.stop()


async def test_a_refused_key_or_a_dead_address_tells_the_user_waiting_will_not_help(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm, llm_max_retries=0) as gw:
        fake_llm.error(401, message="invalid api key")
        await gw.deliver(make_text_update(1, "hello", user_id=7, chat_id=7))
        assert sent_to(gw, 7) == [MODEL_DOWN]


def test_a_few_calls_do_not_open_an_outage_and_one_that_answers_closes_it() -> None:
    clock = Clock()
    health = ModelHealth(window_seconds=300, min_calls=3, share=0.5, clock=clock)
    assert not health.known and health.failing() is None
    health.record("HTTP 500")
    health.record("HTTP 500")
    assert health.failing() is None  # under the floor
    health.record(None)
    health.record("HTTP 503")
    failing = health.failing()
    assert failing is not None and (failing.failed, failing.calls) == (3, 4)
    assert failing.error == "HTTP 503" and failing.since == clock.now
    clock.now += 400  # the window is empty: the last call failed, the outage stays
    assert health.failing() is not None
    health.record(None)
    assert health.failing() is None
    for _ in range(3):
        health.record(None)
    health.record("HTTP 500")
    assert health.failing() is None  # one in five: under the share


def test_only_the_windows_failures_count_once_older_ones_leave_it() -> None:
    clock = Clock()
    health = ModelHealth(window_seconds=300, min_calls=3, share=0.5, clock=clock)
    for _ in range(3):
        health.record("HTTP 500")
    clock.now += 200
    health.record(None)
    health.record("HTTP 502")
    failing = health.failing()
    assert failing is not None and (failing.failed, failing.calls) == (4, 5)
    clock.now += 150  # the first three are out of the window now
    health.record(None)
    health.record(None)
    assert health.failing() is None  # one failure in four calls
    health.record("HTTP 503")
    health.record("HTTP 504")
    failing = health.failing()
    assert failing is not None and (failing.failed, failing.calls) == (3, 6)
    assert failing.error == "HTTP 504"
