"""The on-board model's process is watched: started again when it dies, given up when it
cannot start, and the gateway's health says which."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import stat
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest
from aiohttp.test_utils import TestClient, TestServer

from gateway.app import build_app
from gateway.config import AlertSettings, Settings
from gateway.core.unix_sockets import OWN_SERVERS
from gateway.errors import ConfigError, ModelError
from gateway.runtime.alerts import MODEL_DOWN, AlertWatcher, looker
from gateway.runtime.assembly import chat_client
from gateway.runtime.local_model import HOST, ModelProcess, UnixHTTPConnection, private_dir
from gateway.runtime.own_server import own_session
from gateway.store import SqliteStore
from tests.runtime.test_alerts import Clock, Told
from tests.serve_process import free_port

FAKE = str(Path(__file__).resolve().parents[1] / "fakes" / "model_process.py")


def answer(sock: Path) -> str:
    body = json.dumps({"model": "fake-local", "messages": [{"role": "user", "content": "hi"}]})
    conn = UnixHTTPConnection(sock, timeout=5)
    try:
        conn.request(
            "POST", "/v1/chat/completions", body, headers={"Content-Type": "application/json"}
        )
        return str(json.loads(conn.getresponse().read())["choices"][0]["message"]["content"])
    finally:
        conn.close()


def until(done: Callable[[], bool], timeout: float = 30.0) -> None:
    """Poll a condition the process reaches by itself, failing past `timeout`."""
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, "the condition was not reached in time"
        time.sleep(0.05)


@contextmanager
def fake_model(tmp_path: Path, **limits: float) -> Iterator[tuple[ModelProcess, Path]]:
    sock = private_dir() / "model.sock"
    command = [sys.executable, FAKE, str(sock), str(tmp_path / "die")]
    process = ModelProcess(command, sock, "fake model server", timeout=30, **limits)  # type: ignore[arg-type]
    OWN_SERVERS[str(sock)] = lambda: own_session(str(sock), process.serving)  # as serve does
    try:
        process.start()
        process.watch()
        yield process, sock
    finally:
        process.stop()
        OWN_SERVERS.pop(str(sock), None)
        shutil.rmtree(sock.parent)


def test_a_killed_model_process_is_started_again_and_answers(tmp_path: Path) -> None:
    with fake_model(tmp_path, backoff=0.01) as (process, sock):
        assert process.proc is not None
        first = process.proc.pid
        assert answer(sock) == f"answered by {first}"
        process.proc.kill()
        until(lambda: process.proc is not None and process.proc.pid != first)
        until(lambda: process.state == "running")
        assert answer(sock) == f"answered by {process.proc.pid}"
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
    with fake_model(tmp_path, backoff=0.01, restarts=1) as (process, sock):
        settings = make_settings(
            llm_base_url=f"http://{HOST}/v1", llm_unix_socket=str(sock), llm_model="fake-local"
        )
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


def test_the_model_listens_on_no_port_and_a_process_on_its_old_one_is_sent_nothing(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    # The third hostile review: a local process bound the child's loopback port before the
    # model loaded (or after it died), answered /health, and was sent the users' messages
    # and memory (docs/SECURITY.md, T7). The child now has no port; a process on a port,
    # as the old child's was, gets nothing, and the gateway's own client reaches the child.
    port = free_port()
    heard = tmp_path / "squatter.log"
    squatter = _squat(str(port), heard)
    try:
        until(lambda: _answers(f"http://127.0.0.1:{port}"))
        with fake_model(tmp_path) as (process, sock):
            assert process.proc is not None
            assert psutil.Process(process.proc.pid).net_connections(kind="inet") == []
            home = os.lstat(sock.parent)
            assert (stat.S_IMODE(home.st_mode), home.st_uid) == (0o700, os.getuid())
            settings = make_settings(
                llm_base_url=f"http://{HOST}/v1", llm_unix_socket=str(sock), llm_model="fake-local"
            )
            said = asyncio.run(_chat(settings, "my secret plans"))
            assert said == f"answered by {process.proc.pid}"
        assert not heard.exists()  # the process on a port was sent nothing
    finally:
        _leave(squatter)


def test_a_process_that_took_the_socket_while_the_model_was_down_is_sent_nothing(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    # The gap the review left open: between the child's death and its restart. A process
    # (of this user's: no other can enter the directory) binds the path in that gap. Every
    # connection's peer is checked before a byte is sent: a call in the gap fails, sending
    # nothing; the restart removes the path, the new child binds it afresh and answers.
    heard = tmp_path / "squatter.log"
    # The watcher waits a minute before its restart; the test makes that start itself.
    with fake_model(tmp_path, backoff=60.0) as (process, sock):
        assert process.proc is not None
        first = process.proc.pid
        settings = make_settings(
            llm_base_url=f"http://{HOST}/v1",
            llm_unix_socket=str(sock),
            llm_model="fake-local",
            llm_max_retries=0,
        )
        process.proc.kill()
        process.proc.wait()
        squatter = _squat(str(sock), heard)
        try:
            until(lambda: _peer(sock) == squatter.pid)  # it answers on the path now
            with pytest.raises(ModelError, match="NotOurServer"):
                asyncio.run(_chat(settings, "my secret plans"))
            process.start()  # the restart: the path removed, the new child binds it afresh
            assert process.proc is not None and process.proc.pid != first
            said = asyncio.run(_chat(settings, "my secret plans"))
            assert said == f"answered by {process.proc.pid}"
            assert squatter.poll() is None  # it ran all along
        finally:
            _leave(squatter)
    assert not heard.exists()  # and was sent nothing


def test_a_process_answering_on_the_socket_before_the_child_is_never_taken_for_the_model(
    tmp_path: Path,
) -> None:
    # A process of this user's that binds the path after the gateway removed the old file
    # and before the child binds it answers /health first: the kernel says whose the
    # listening socket is, and the start refuses it at once.
    sock = private_dir() / "model.sock"
    child = [sys.executable, "-c", "import sys; sys.stdin.read()"]  # binds nothing
    process = ModelProcess(child, sock, "fake model server", timeout=30)
    failed: list[BaseException] = []

    def start() -> None:
        try:
            process.start()
        except ConfigError as exc:
            failed.append(exc)

    starting = threading.Thread(target=start)
    starting.start()
    squatter = None
    try:
        until(lambda: process.proc is not None)
        squatter = _squat(str(sock), tmp_path / "squatter.log")
        starting.join(timeout=30)
        assert not starting.is_alive()
        [error] = failed
        assert f"another process (pid {squatter.pid}) answered" in str(error)
        assert process.proc is not None and process.proc.poll() is not None
    finally:
        if squatter is not None:
            _leave(squatter)
        process.stop()
        shutil.rmtree(sock.parent)


async def _chat(settings: Settings, text: str) -> str:
    llm = chat_client(settings, str(settings.llm_base_url), "fake-local", None, None)
    try:
        reply = await llm.complete([{"role": "user", "content": text}])
    finally:
        await llm.close()
    return str(reply.text)


def _squat(where: str, log: Path) -> subprocess.Popen[bytes]:
    """A process serving the model's API at `where` (a port or a socket path), writing what
    it is sent to `log`."""
    env = {**os.environ, "FAKE_MODEL_LOG": str(log)}
    return subprocess.Popen([sys.executable, FAKE, where], stdin=subprocess.PIPE, env=env)


def _peer(sock: Path) -> int | None:
    conn = UnixHTTPConnection(sock)
    try:
        conn.request("GET", "/health")
        conn.getresponse().read()
        return conn.peer
    except OSError:
        return None
    finally:
        conn.close()


def _leave(proc: subprocess.Popen[bytes]) -> None:
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait(timeout=10)


def _answers(base: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base}/health", timeout=1):
            return True
    except OSError:
        return False
