"""A fresh clone: `./scripts/serve` alone gives a first answer in `skillgate chat`.

With nothing configured (no .env, no setting in the environment), README's first command
starts the gateway with the on-board model (llama.cpp's server and SmolLM2, the wheels the
real-model step installs) as its default, turns the console on with a token it generates
into .env and shows once, and `skillgate chat` beside it answers with that model. No
question is asked: stdin is closed. The script runs as it is; only its install step finds
an install already made (a stand-in .venv for this interpreter), since installing from the
network has no place in a test.
"""

from __future__ import annotations

import asyncio
import os
import re
import stat
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
import pytest

from gateway.core.agent import APOLOGY
from tests.fresh_clone import fresh_clone, plain_env
from tests.real_llama import INSTALL, available
from tests.serve_process import free_port

REQUIRED = os.environ.get("SKILLGATE_REQUIRE_REAL_MODEL") == "1"
pytestmark = [
    pytest.mark.real_model,
    pytest.mark.skipif(
        not available() and not REQUIRED,
        reason=f"the real-model wheels are not installed: {INSTALL}",
    ),
]
LOAD_SECONDS = 300.0


@asynccontextmanager
async def scripts_serve(clone: Path, env: dict[str, str]) -> AsyncIterator[tuple[str, list[str]]]:
    """`./scripts/serve --port N` until the block ends; its URL and the stderr lines so far."""
    port = free_port()
    proc = await asyncio.create_subprocess_exec(
        str(clone / "scripts" / "serve"), "--port", str(port),
        cwd=clone, env=env, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stderr is not None
    lines: list[str] = []
    url = f"http://127.0.0.1:{port}"

    async def read() -> None:
        assert proc.stderr is not None
        async for raw in proc.stderr:
            lines.append(raw.decode(errors="replace").rstrip("\n"))

    reader = asyncio.create_task(read())
    try:
        deadline = asyncio.get_running_loop().time() + LOAD_SECONDS
        async with aiohttp.ClientSession() as http:
            while True:
                if proc.returncode is not None:
                    raise AssertionError("scripts/serve ended:\n" + "\n".join(lines))
                if asyncio.get_running_loop().time() > deadline:
                    raise AssertionError("scripts/serve did not answer:\n" + "\n".join(lines))
                try:
                    async with http.get(f"{url}/healthz") as resp:
                        if resp.status == 200:
                            break
                except aiohttp.ClientConnectionError:
                    pass
                await asyncio.sleep(0.2)
        yield url, lines
    finally:
        if proc.returncode is None:
            proc.terminate()
        await asyncio.wait_for(proc.wait(), 30)
        await asyncio.wait_for(reader, 5)
    assert "Traceback" not in "\n".join(lines), "\n".join(lines)


async def test_scripts_serve_on_a_fresh_clone_answers_a_first_chat_with_no_question(
    tmp_path: Path,
) -> None:
    clone = fresh_clone(tmp_path)
    env = plain_env(tmp_path / "home")
    # Short answers: a tiny model on a busy CPU writes a few tokens a second. This bounds the
    # answer only; no model is configured.
    env["LLM_MAX_TOKENS"] = "48"
    async with scripts_serve(clone, env) as (url, lines):
        said = "\n".join(lines)
        # The banner: the on-board default, and the one line that sets a real model.
        assert "the on-board default" in said, said
        assert "./scripts/init" in said and "LLM_BASE_URL and LLM_MODEL" in said
        # The console's token: generated into a private .env, shown once, and it signs in.
        env_file = clone / ".env"
        assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
        match = re.search(r"^SKILLGATE_ADMIN_TOKEN=(\S+)$", env_file.read_text(), re.M)
        assert match is not None
        token = match.group(1)
        assert said.count(token) == 1, "the token is shown exactly once"
        assert f"admin console: {url}/admin/" in said
        async with aiohttp.ClientSession() as http:
            headers = {"Authorization": f"Bearer {token}"}
            async with http.get(f"{url}/admin/api/proposals", headers=headers) as resp:
                assert resp.status == 200
            async with http.get(f"{url}/healthz") as resp:
                health = await resp.json()
        assert health["status"] == "ok", health

        # `skillgate chat`, typed as the banner prints it, in a new shell in the clone.
        (chat_line,) = set(re.findall(r"`([^`]*skillgate chat)`", said))
        proc = await asyncio.create_subprocess_exec(
            "bash", "-c", chat_line,
            cwd=clone, env=env, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(
            proc.communicate(b"Hello! Who are you?\n/quit\n"), LOAD_SECONDS
        )
    text = out.decode()
    assert proc.returncode == 0, err.decode()
    assert "bot> " in text, text + err.decode()
    reply = text.split("bot> ", 1)[1].split("you> ", 1)[0]
    assert reply.strip() and APOLOGY not in text
    assert "no model" not in reply.lower()

    # A second start shows no token: it is in .env, and the banner says where to sign in.
    async with scripts_serve(clone, env) as (url, lines):
        pass
    again = "\n".join(lines)
    assert token not in again and "shown this once" not in again
    assert f"admin console: {url}/admin/" in again


def test_the_on_board_model_init_installed_is_not_installed_again(tmp_path: Path) -> None:
    """`./scripts/init --local-model smollm2` installs the wheels itself; the next
    `./scripts/serve` finds them and only notes it."""
    clone = fresh_clone(tmp_path)
    stamp = clone / ".venv" / ".installed-pyproject"
    base = stamp.read_text().split()[0]
    stamp.write_text(f"{base}\n")
    done = subprocess.run(
        ["scripts/install", "--on-board"],
        cwd=clone, env=plain_env(tmp_path / "home"), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "installing" not in done.stderr and "adding" not in done.stderr, done.stderr
    assert stamp.read_text().split() == [base, "on-board"]
