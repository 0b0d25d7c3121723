"""`skillgate serve` looks at the model once at start: a dead one is a WARNING, and it serves."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp

from tests.fakes.openai_server import FakeOpenAI
from tests.serve_process import Served, free_port, serving


async def answered_at_start(served: Served) -> Any:
    """/healthz's verdict on the model, once serve's look at it has ended."""
    async with aiohttp.ClientSession() as http:
        for _ in range(200):
            async with http.get(f"{served.url}/healthz") as resp:
                seen = (await resp.json())["model"]["answered_at_start"]
            if seen is not None:
                return seen
            await asyncio.sleep(0.05)
    raise AssertionError("serve never looked at the model")


async def test_serve_warns_with_the_fix_when_the_model_does_not_answer_and_still_starts() -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"
    async with serving(env={"LLM_BASE_URL": dead, "LLM_MODEL": "m"}) as served:
        assert served.health["status"] == "ok"
        assert await answered_at_start(served) is False
    warning = next(ln for ln in served.stderr.splitlines() if "does not answer" in ln)
    assert "WARNING" in warning and dead in warning and "connection refused" in warning
    assert "LLM_BASE_URL" in warning and "skillgate doctor" in warning


async def test_serve_says_nothing_of_the_kind_when_the_model_answers(fake_llm: FakeOpenAI) -> None:
    env = {"LLM_BASE_URL": fake_llm.base_url, "LLM_MODEL": "fake-model"}
    async with serving(env=env) as served:
        assert await answered_at_start(served) is True
    assert "does not answer" not in served.stderr
