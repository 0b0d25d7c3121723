"""What a LINE gateway loads: line-bot-sdk only for an admin's card, the openai client never
for a chat answer or the look at the model (the footprint of #52)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
HEAVY = ("linebot", "openai", "numpy", "pandas")

_ANSWER_ONE = """
import asyncio, json, sys
from pathlib import Path
from aiohttp.test_utils import TestClient, TestServer
from gateway.app import PARTS, build_app
from gateway.config import Settings
from tests.fakes.line_api import FakeLineAPI, sign, text_event, webhook_body
from tests.fakes.openai_server import FakeOpenAI

HEAVY = set(json.loads(sys.argv[2]))

def loaded():
    return sorted({m.split(".")[0] for m in sys.modules} & HEAVY)

async def main():
    async with FakeOpenAI() as llm, FakeLineAPI() as fake:
        llm.default = lambda body: "re: " + body["messages"][-1]["content"]
        settings = Settings(
            _env_file=None, data_dir=Path(sys.argv[1]), llm_base_url=llm.base_url,
            llm_model="fake-model", line_channel_secret="s3cret",
            line_channel_access_token=fake.access_token, line_api_base_url=fake.base_url,
            line_data_api_base_url=fake.data_url,
        )
        async with TestClient(TestServer(build_app(settings))) as http:
            assert (await http.get("/healthz")).status == 200
            at_start = loaded()
            body = webhook_body(text_event("hello", reply_token=fake.issue_reply_token()))
            headers = {"Content-Type": "application/json", "X-Line-Signature": sign("s3cret", body)}
            assert (await http.post("/webhook/line", data=body, headers=headers)).status == 200
            await http.app[PARTS].worker.wait_idle(10)
            assert fake.delivered_texts() == ["re: hello"], fake.delivered_texts()
            said = await http.app[PARTS].agent.llm.ping()  # the alert watcher's look: /models
            print(json.dumps({"start": at_start, "answered": loaded(), "ping": said}))

asyncio.run(main())
"""


def test_importing_the_line_channel_does_not_import_the_sdk() -> None:
    code = (
        "import sys, gateway.channels.line.entry as e;"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'linebot'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_line_answer_loads_neither_the_sdk_nor_the_model_client(tmp_path: Path) -> None:
    """Started, answering a text and looking at /models: no line-bot-sdk (29 MB), no openai
    client (17 MB), no numpy or pandas (which sqlite-utils would import if installed)."""
    argv = [sys.executable, "-c", _ANSWER_ONE, str(tmp_path / "data"), json.dumps(HEAVY)]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen == {"start": [], "answered": [], "ping": "reachable"}
