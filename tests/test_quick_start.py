"""README's quick start on a clean checkout, with the model on board and nothing else.

A copy of the tracked files, a fresh .venv made by the scripts themselves, `init`
choosing the small local model (it installs llama.cpp's server and SmolLM2), then
`./scripts/serve` answering in Telegram by polling and `skillgate chat` in the terminal.
Slow (it installs everything): it runs with the real-model tests (`pytest -m real_model`).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
from pathlib import Path

import aiohttp
import pytest

from gateway.core.agent import APOLOGY
from gateway.runtime.local_model import INSTALL, bundled_path, server_installed
from tests.fakes.telegram_api import FakeTelegramAPI, make_text_update
from tests.serve_process import free_port, skillgate

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [
    pytest.mark.real_model,
    pytest.mark.skipif(shutil.which("git") is None, reason="copies the checkout with git"),
]
INSTALL_SECONDS = 900


def local_model_installed() -> bool:
    return server_installed() and bundled_path() is not None


# pip fetches every dependency into an empty .venv


def clean_checkout(to: Path) -> Path:
    """The tracked files as they are now, without .venv, data or .env."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            (to / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, to / name)
    return to


async def run(checkout: Path, *cmd: str, stdin: str = "", timeout: float = 120) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHON"))}
    proc = await asyncio.create_subprocess_exec(
        *cmd,
        cwd=checkout,
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(proc.communicate(stdin.encode()), timeout)
    text = out.decode()
    assert proc.returncode == 0, text[-3000:]
    return text


async def healthy(port: int, within: float = 120) -> bool:
    async with aiohttp.ClientSession() as http:
        for _ in range(int(within / 0.2)):
            try:
                async with http.get(f"http://127.0.0.1:{port}/healthz") as resp:
                    return resp.status == 200
            except aiohttp.ClientConnectionError:
                await asyncio.sleep(0.2)  # not listening yet, or the model still loading
    return False


def local_servers(checkout: Path) -> list[str]:
    """The local model servers started from this checkout's .venv that still run."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            found.append(cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:
            continue  # it ended while we looked
    return [line for line in found if "runtime.local_model" in line and str(checkout) in line]


async def test_the_quick_start_answers_with_the_model_on_board(
    tmp_path: Path, telegram_api: FakeTelegramAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkout = clean_checkout(tmp_path / "skillgate")
    api = ["--telegram-token", telegram_api.token, "--polling"]
    monkeypatch.setenv("TELEGRAM_API_BASE_URL", telegram_api.base_url)  # the fake Bot API
    # A home of its own whose ~/.local/bin is on PATH, as on a Debian or Ubuntu login.
    home_bin = tmp_path / "home" / ".local" / "bin"
    home_bin.mkdir(parents=True)
    monkeypatch.setenv("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PATH", f"{home_bin}:{os.environ['PATH']}")
    said = await run(
        checkout,
        "./scripts/init", "--non-interactive", "--local-model", "smollm2", *api,
        timeout=INSTALL_SECONDS,
    )  # fmt: skip
    assert "OK   model chat: yes" in said and "wrote .env" in said, said[-3000:]
    assert (home_bin / "skillgate").resolve() == (checkout / ".venv/bin/skillgate").resolve()
    env_text = (checkout / ".env").read_text()
    assert "\nLLM_LOCAL_MODEL=smollm2\n" in env_text and "\nLLM_BASE_URL=" not in env_text

    # Short answers: a tiny model on a busy CPU writes a few tokens a second.
    monkeypatch.setenv("LLM_MAX_TOKENS", "48")
    port = free_port()
    serve = await asyncio.create_subprocess_exec(
        "./scripts/serve", "--port", str(port),
        cwd=checkout,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert await healthy(port), "./scripts/serve did not answer /healthz"
        assert local_servers(checkout), "serve started no local model server"
        telegram_api.push_update(make_text_update(1, "Hello! Who are you?"))
        await telegram_api.wait_for("sendMessage", timeout=300)  # a busy CPU writes slowly
    finally:
        serve.send_signal(signal.SIGINT)  # Ctrl-C, as a person stops it
        _, err = await asyncio.wait_for(serve.communicate(), 60)
    log = err.decode()
    assert "tiny model" in log and "not for users" in log, log[-3000:]
    (answer,) = telegram_api.sent_texts(1001)
    assert answer.strip() and answer != APOLOGY
    assert not local_servers(checkout), "the model's server outlived serve"

    # As README types it: the bare command, found on PATH.
    chat = await run(checkout, "skillgate", "chat", stdin="Hello!\n/quit\n")
    reply = chat.split("bot> ", 1)[1].split("you> ", 1)[0]
    assert reply.strip() and APOLOGY not in chat, chat


@pytest.mark.skipif(
    not local_model_installed(), reason=f"the local model is not installed: {INSTALL}"
)
async def test_doctor_starts_the_local_model_probes_it_and_says_it_is_for_trying(
    tmp_path: Path,
) -> None:
    env = {"LLM_LOCAL_MODEL": "smollm2", "SKILLGATE_DATA_DIR": str(tmp_path / "data")}
    _, out, err = await skillgate("doctor", env=env, timeout=300)
    assert "WARN local model: smollm2: a tiny model on this machine" in out, out + err
    assert "not for users" in out and "OK   model chat: yes" in out, out
    assert "context 4096 tokens" in out
