"""The on-board model's process is watched: started again when it dies, given up when it
cannot start, and the gateway's health says which."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer

from gateway.app import build_app
from gateway.config import AlertSettings, Settings
from gateway.errors import ConfigError
from gateway.runtime.alerts import MODEL_DOWN, AlertWatcher, looker
from gateway.runtime.local_model import ModelProcess, listens
from gateway.store import SqliteStore
from tests.runtime.test_alerts import Clock, Told
from tests.serve_process import free_port

FAKE = str(Path(__file__).resolve().parents[1] / "fakes" / "model_process.py")


def answer(base: str) -> str:
    body = json.dumps({"model": "fake-local", "messages": [{"role": "user", "content": "hi"}]})
    request = urllib.request.Request(
        f"{base}/v1/chat/completions",
        data=body.encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=5) as resp:
        return str(json.loads(resp.read())["choices"][0]["message"]["content"])


def until(done: Callable[[], bool], timeout: float = 30.0) -> None:
    """Poll a condition the process reaches by itself, failing past `timeout`."""
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, "the condition was not reached in time"
        time.sleep(0.05)


@contextmanager
def fake_model(tmp_path: Path, **limits: float) -> Iterator[tuple[ModelProcess, str]]:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    command = [sys.executable, FAKE, str(port), str(tmp_path / "die")]
    process = ModelProcess(command, base, "fake model server", timeout=30, **limits)  # type: ignore[arg-type]
    process.start()
    process.watch()
    try:
        yield process, base
    finally:
        process.stop()


def test_a_killed_model_process_is_started_again_and_answers(tmp_path: Path) -> None:
    with fake_model(tmp_path, backoff=0.01) as (process, base):
        assert process.proc is not None
        first = process.proc.pid
        assert answer(base) == f"answered by {first}"
        process.proc.kill()
        until(lambda: process.proc is not None and process.proc.pid != first)
        until(lambda: process.state == "running")
        assert answer(base) == f"answered by {process.proc.pid}"
        assert len(process.restarted) == 1 and process.gave_up is None


def test_a_model_that_cannot_start_again_is_given_up_with_the_reason_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with (
        caplog.at_level(logging.INFO, logger="gateway.model"),
        fake_model(tmp_path, backoff=0.01, restarts=2) as (process, _base),
    ):
        assert process.proc is not None
        (tmp_path / "die").touch()
        process.proc.kill()
        until(lambda: process.gave_up is not None)
        assert process.gave_up is not None and "died 3 times within 10 minutes" in process.gave_up
        assert process.state.startswith("stopped: ")
    said = [r.getMessage() for r in caplog.records]
    assert any("exited" in line and "starting it again" in line for line in said)
    assert sum("the model file is gone" in line for line in said) == 2  # each failed start
    assert any(
        r.levelno == logging.ERROR and "not started again" in r.getMessage() for r in caplog.records
    )


async def test_health_says_degraded_when_the_model_process_is_given_up(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    with fake_model(tmp_path, backoff=0.01, restarts=1) as (process, base):
        settings = make_settings(llm_base_url=f"{base}/v1", llm_model="fake-local")
        app = build_app(settings, channels=[], model_process=process)
        async with TestClient(TestServer(app)) as client:
            async with client.get("/healthz") as resp:
                body = await resp.json()
            assert body["status"] == "ok" and body["model"]["process"] == "running"
            assert process.proc is not None
            (tmp_path / "die").touch()
            process.proc.kill()
            until(lambda: process.gave_up is not None)
            async with client.get("/healthz") as resp:
                body = await resp.json()
            assert body["status"] == "degraded"
            assert body["model"]["state"].startswith("failing: the fake model server died")


async def test_a_given_up_model_process_is_the_alerts_error_with_its_fix(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    class GivenUp:
        state = "stopped: it died"
        gave_up = "the model server died 6 times within 10 minutes; not started again"

    # As `serve` has them: pointed at the server it started.
    started = {"llm_base_url": f"http://127.0.0.1:{free_port()}/v1", "llm_model": "smollm2"}
    settings = make_settings(llm_local_model="smollm2").model_copy(update=started)
    told = Told()
    limits = AlertSettings(alert_model_minutes=10, alert_disk_mb=0, alert_synthesis_failures=0)
    async with SqliteStore(tmp_path / "alerts.db") as store:
        look = looker(settings, store, 0, None, None, GivenUp())
        seen = await look()
        assert seen.model_error == GivenUp.gave_up
        assert "LLM_LOCAL_MODEL" in seen.model_fix and "restart `skillgate serve`" in seen.model_fix
        watcher = AlertWatcher(store, look, told, limits, clock=Clock())
        await watcher.tick()  # waiting will not mend it: told at once, not in 10 minutes
        await watcher.tick()
        await watcher.stop()
    assert told.messages == [MODEL_DOWN]
    assert told.said[0][1]["error"] == GivenUp.gave_up.rstrip(".")


def test_a_process_that_took_the_models_port_first_is_never_taken_for_the_model(
    tmp_path: Path,
) -> None:
    # The third hostile review: a local process bound the child's port before the model
    # loaded, answered /health, and was sent the users' messages (docs/SECURITY.md, T7).
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    squatter = subprocess.Popen([sys.executable, FAKE, str(port)], stdin=subprocess.PIPE)
    try:
        until(lambda: _answers(base))
        command = [sys.executable, FAKE, str(port), str(tmp_path / "die")]
        process = ModelProcess(command, base, "fake model server", timeout=30)
        with pytest.raises(ConfigError, match=f"another process answered .* port {port}"):
            process.start()
        assert process.proc is not None and process.proc.poll() is not None
        assert listens(squatter.pid, port)
    finally:
        assert squatter.stdin is not None
        squatter.stdin.close()
        squatter.wait(timeout=10)


def _answers(base: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base}/health", timeout=1):
            return True
    except OSError:
        return False
