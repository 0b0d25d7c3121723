"""Answers that failed for the configuration (a refused key, a dead URL) are not evidence."""

from __future__ import annotations

from collections.abc import Callable

from gateway.config import Settings
from gateway.core.agent import APOLOGY, MODEL_DOWN
from gateway.core.models import ChatRef, IncomingMessage
from tests.console_support import sign_in
from tests.fakes.openai_server import FakeOpenAI
from tests.synthesis_support import answer, evidence_prompt, gateway, synth_settings


async def test_a_refused_key_is_kept_out_of_evidence_and_shown_apart_a_server_error_is_not(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    async with gateway(settings) as gw:
        agent, store = gw.parts.agent, gw.parts.store
        replies = {}
        for chat, status, said in (
            ("key", 401, "Incorrect API key provided"),
            ("busy", 503, "the server is overloaded"),
        ):
            fake_llm.error(status, message=said)
            ref = ChatRef(channel="telegram", chat_id=chat, user_id=chat)
            replies[chat] = await agent.respond(IncomingMessage(chat=ref, text=f"hi from {chat}"))
            await store.finish_chat_session("telegram", chat, "new")
        # Waiting does not mend a refused key; a busy server's one failure it may.
        assert (replies["key"].text, replies["busy"].text) == (MODEL_DOWN, APOLOGY)
        key_trace = await store.get_trace(replies["key"].message_id or 0)
        busy_trace = await store.get_trace(replies["busy"].message_id or 0)
        assert key_trace is not None and key_trace.operator_error
        assert busy_trace is not None and not busy_trace.operator_error

        fake_llm.reply(answer())
        run = await gw.synthesize()
        assert run["status"] == "ok"
        shown = evidence_prompt(fake_llm.requests[-1])
        assert "hi from busy" in shown and "the server is overloaded" in shown
        assert "hi from key" not in shown and "API key" not in shown

        await sign_in(gw.client)
        pages = []
        for sid in (1, 2):
            resp = await gw.client.get(f"/admin/conversations/{sid}")
            pages.append(await resp.text())
    key_page = next(p for p in pages if "hi from key" in p)
    busy_page = next(p for p in pages if "hi from busy" in p)
    assert "configuration error · not evidence" in key_page
    assert "configuration error" not in busy_page
