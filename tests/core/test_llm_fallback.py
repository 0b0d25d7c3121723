"""LLM_FALLBACK_MODELS: each fallback tried in order; the trace names the model that answered."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gateway.config import Settings, load_settings
from gateway.core.agent import APOLOGY
from gateway.core.models import ChatRef, IncomingMessage
from gateway.errors import ConfigError
from gateway.runtime.assembly import close_parts, open_parts
from tests.fakes.openai_server import FakeOpenAI

HELLO = IncomingMessage(chat=ChatRef(channel="console", chat_id="c1", user_id="u1"), text="hi")


async def test_an_unavailable_primary_falls_back_to_a_model_on_another_server(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with FakeOpenAI(models=("backup",)) as other:
        settings = make_settings(
            llm_base_url=fake_llm.base_url,
            llm_model="primary",
            llm_max_retries=0,
            llm_fallback_models=f"also-refused,backup@{other.base_url}",
            llm_api_key="sk-primary-key-0000",
            llm_fallback_api_keys=",sk-backup-key-1111",
        )
        parts = await open_parts(settings)
        try:
            fake_llm.error(503)
            fake_llm.error(404, message="The model `also-refused` does not exist")
            other.reply("From the backup.")
            reply = await parts.agent.respond(HELLO)
            trace = await parts.store.get_trace(reply.message_id or 0)
        finally:
            await close_parts(parts)
        assert reply.text == "From the backup." and reply.kind == "normal"
        assert [r["model"] for r in fake_llm.requests] == ["primary", "also-refused"]
        assert other.requests[0]["model"] == "backup"
        assert trace is not None and trace.model == "backup"
        assert any("fallback backup" in n and "HTTP 503" in n for n in trace.notes)


async def test_when_every_model_fails_the_user_gets_the_apology_with_each_cause_traced(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = make_settings(
        llm_base_url=fake_llm.base_url,
        llm_model="primary",
        llm_max_retries=0,
        llm_fallback_models="second",
    )
    parts = await open_parts(settings)
    try:
        fake_llm.error(500, message="primary is down")
        fake_llm.error(400, message="second refuses")
        reply = await parts.agent.respond(HELLO)
        trace = await parts.store.get_trace(reply.message_id or 0)
    finally:
        await close_parts(parts)
    assert reply.text == APOLOGY
    assert trace is not None and trace.error is not None
    assert "primary is down" in trace.error and "second refuses" in trace.error


def test_a_fallback_entry_with_a_bad_base_url_is_refused_at_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LLM_FALLBACK_MODELS", "good, m@ftp://nowhere")
    with pytest.raises(ConfigError, match=r"LLM_FALLBACK_MODELS.*m@ftp://nowhere"):
        load_settings(_env_file=None)
