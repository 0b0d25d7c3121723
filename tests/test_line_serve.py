"""`skillgate serve` as a real process answers a signed LINE webhook through the fakes."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import aiohttp

from tests.fakes.line_api import USER_ID, FakeLineAPI, sign, text_event, webhook_body
from tests.fakes.openai_server import FakeOpenAI
from tests.line_support import REPLY, SECRET, quick_reply_data
from tests.test_cli import free_port


async def test_serve_answers_a_signed_line_message(tmp_path: Path, fake_llm: FakeOpenAI) -> None:
    fake_llm.reply("Hello from *skillgate* over LINE.")
    async with FakeLineAPI() as line:
        port = free_port()
        env = {
            **os.environ,
            "SKILLGATE_DATA_DIR": str(tmp_path / "data"),
            "LLM_BASE_URL": fake_llm.base_url,
            "LLM_MODEL": "fake-model",
            "LINE_CHANNEL_SECRET": SECRET,
            "LINE_CHANNEL_ACCESS_TOKEN": line.access_token,
            "LINE_API_BASE_URL": line.base_url,
        }
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "gateway.cli",
            "serve",
            "--port",
            str(port),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            async with aiohttp.ClientSession() as http:
                health = None
                for _ in range(300):  # readiness poll, bounded to ~30 s
                    try:
                        async with http.get(f"{base}/healthz") as resp:
                            health = await resp.json()
                            break
                    except aiohttp.ClientConnectionError:
                        await asyncio.sleep(0.1)
                assert health is not None
                assert health["channels"]["line"]["push_quota_exhausted"] is False

                body = webhook_body(
                    text_event("hi", reply_token=line.issue_reply_token(to=USER_ID))
                )
                headers = {"X-Line-Signature": sign(SECRET, body)}
                async with http.post(f"{base}/webhook/line", data=body, headers=headers) as resp:
                    assert resp.status == 200
                [call] = await line.wait_for(REPLY, timeout=20)
        finally:
            proc.terminate()
            _out, err = await asyncio.wait_for(proc.communicate(), 20)
    assert proc.returncode == 0, err.decode()
    assert line.delivered_texts(to=USER_ID) == ["Hello from skillgate over LINE."]
    assert len(quick_reply_data(call.body["messages"][-1])) == 2
    assert line.access_token not in err.decode() and SECRET not in err.decode()
