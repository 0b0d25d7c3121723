"""`skillgate serve` as a real process answers a signed LINE webhook through the fakes."""

from __future__ import annotations

from pathlib import Path

import aiohttp

from tests.fakes.line_api import USER_ID, FakeLineAPI, sign, text_event, webhook_body
from tests.fakes.openai_server import FakeOpenAI
from tests.line_support import REPLY, SECRET, quick_reply_data
from tests.serve_process import serving


async def test_serve_answers_a_signed_line_message(tmp_path: Path, fake_llm: FakeOpenAI) -> None:
    fake_llm.reply("Hello from *skillgate* over LINE.")
    async with FakeLineAPI() as line:
        env = {
            "SKILLGATE_DATA_DIR": str(tmp_path / "data"),
            "LLM_BASE_URL": fake_llm.base_url,
            "LLM_MODEL": "fake-model",
            "LINE_CHANNEL_SECRET": SECRET,
            "LINE_CHANNEL_ACCESS_TOKEN": line.access_token,
            "LINE_API_BASE_URL": line.base_url,
        }
        async with serving(env=env) as served, aiohttp.ClientSession() as http:
            assert served.health["channels"]["line"]["push_quota_exhausted"] is False
            body = webhook_body(text_event("hi", reply_token=line.issue_reply_token(to=USER_ID)))
            headers = {"X-Line-Signature": sign(SECRET, body), "Content-Type": "application/json"}
            async with http.post(f"{served.url}/webhook/line", data=body, headers=headers) as resp:
                assert resp.status == 200
            [call] = await line.wait_for(REPLY, timeout=20)
    assert served.returncode == 0, served.stderr
    assert line.delivered_texts(to=USER_ID) == ["Hello from skillgate over LINE."]
    assert len(quick_reply_data(call.body["messages"][-1])) == 2
    assert line.access_token not in served.stderr and SECRET not in served.stderr
