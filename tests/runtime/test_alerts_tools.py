"""A tool server that goes away: the admins hear it once, in their private chat and the log,
and again when it is back."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest

from gateway.config import AlertSettings, Settings
from gateway.runtime.alerts import LOCK_NAME, TOOL_BACK, TOOL_DOWN, AlertWatcher, looker
from gateway.shell import as_typed_here
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import make_text_update
from tests.runtime.test_alerts import Clock
from tests.telegram_harness import telegram_gateway
from tests.tools.http_server import ToyServer
from tests.tools.support import tools_file

ADMIN = 4242
MINUTE = 60.0


async def test_a_tool_server_that_goes_away_is_told_once_and_again_when_it_is_back(
    make_settings: Callable[..., Settings],
    fake_llm: FakeOpenAI,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="gateway.alerts")
    served = ToyServer().running()
    toy = await served.__aenter__()
    port = int(toy.url.rsplit(":", 1)[1].split("/", 1)[0])
    path = tools_file(tmp_path, servers={"toy": {"url": toy.url, "trusted": True}})
    async with telegram_gateway(
        make_settings, fake_llm, tools_file=path, telegram_admin_ids=[ADMIN]
    ) as gw:
        await gw.deliver(make_text_update(1, "/start", user_id=ADMIN, chat_id=ADMIN))
        cards, tools = gw.parts.admins.cards, gw.parts.tools
        assert cards is not None and tools is not None
        assert [s.alive for s in tools.status()] == [True]
        await served.__aexit__(None, None, None)  # the server goes away
        clock = Clock()
        limits = AlertSettings(
            alert_model_minutes=0, alert_webhook_hours=0, alert_disk_mb=0, alert_tool_minutes=5
        )
        look = looker(gw.parts.settings, gw.parts.store, 0, tools)
        watcher = AlertWatcher(gw.parts.store, look, cards.tell_admins, limits, clock=clock)

        await watcher.tick()  # its ping fails: down from now on
        assert [s.alive for s in tools.status()] == [False]
        clock.now += 4 * MINUTE
        await watcher.tick()
        assert _alerts(gw) == []  # not yet five minutes
        clock.now += 2 * MINUTE
        await watcher.tick()
        clock.now += MINUTE
        await watcher.tick()
        [down] = _alerts(gw)
        assert down.startswith("⚠️ The tool server toy has been unavailable for 6 min: ")
        assert as_typed_here("`skillgate tools list`") in down  # as this shell runs it

        async with ToyServer().running(port):  # back on the same address
            clock.now += 3 * MINUTE
            await watcher.tick()  # started again
            assert [s.alive for s in tools.status()] == [True]
            await watcher.tick()
            assert _alerts(gw)[1:] == [
                "✅ The tool server toy is back (it was unavailable for 10 min)."
            ]
            await watcher.stop()
    logged = [r.getMessage() for r in caplog.records if r.name == "gateway.alerts"]
    assert len(logged) == 2
    assert logged[0].startswith("alert tool:toy: " + TOOL_DOWN.split("{", 1)[0])
    assert logged[1].startswith("alert tool:toy-back: " + TOOL_BACK.split("{", 1)[0])


def _alerts(gw: object) -> list[str]:
    texts: list[str] = gw.fake.sent_texts(ADMIN)  # type: ignore[attr-defined]
    return [t for t in texts if "tool server" in t]


async def test_a_replica_that_does_not_watch_still_starts_its_own_dead_tool_server_again(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    """Each replica holds its own tool sessions: the one without the alert lease revives its own,
    and tells nobody (the watching replica tells)."""
    served = ToyServer().running()
    toy = await served.__aenter__()
    port = int(toy.url.rsplit(":", 1)[1].split("/", 1)[0])
    path = tools_file(tmp_path, servers={"toy": {"url": toy.url, "trusted": True}})
    async with telegram_gateway(
        make_settings, fake_llm, tools_file=path, telegram_admin_ids=[ADMIN]
    ) as gw:
        await gw.deliver(make_text_update(1, "/start", user_id=ADMIN, chat_id=ADMIN))
        cards, tools, store = gw.parts.admins.cards, gw.parts.tools, gw.parts.store
        assert cards is not None and tools is not None
        clock = Clock()
        limits = AlertSettings(
            alert_model_minutes=0, alert_webhook_hours=0, alert_disk_mb=0, alert_tool_minutes=5
        )
        look = looker(gw.parts.settings, store, 0, tools)
        other = AlertWatcher(store, look, cards.tell_admins, limits, clock=clock)
        assert await store.acquire_lock(LOCK_NAME, other.holder, clock(), 3600)  # it watches
        mine = AlertWatcher(store, look, cards.tell_admins, limits, clock=clock, revive=tools.probe)

        await served.__aexit__(None, None, None)  # the server goes away
        await mine.tick()
        assert [s.alive for s in tools.status()] == [False]
        async with ToyServer().running(port):  # back on the same address
            clock.now += 10 * MINUTE
            await mine.tick()
            assert [s.alive for s in tools.status()] == [True]
        assert _alerts(gw) == []  # telling is the watching replica's
        await store.release_lock(LOCK_NAME, other.holder)
