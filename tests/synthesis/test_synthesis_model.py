"""Synthesis against servers that refuse JSON mode, wrap JSON in prose, or never answer usably."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable

from aiohttp.test_utils import TestClient, TestServer

from gateway.app import MODEL_LOOK, build_app
from gateway.config import Settings
from gateway.synthesis.budget import answer_tokens
from gateway.synthesis.synthesizer import BATCH_ATTEMPTS, FAILED_BATCH_KEY
from tests.console_support import sign_in
from tests.fakes.openai_server import FakeOpenAI
from tests.synthesis_support import (
    Gateway,
    answer,
    evidence_prompt,
    gateway,
    proposal,
    synth_settings,
)

LM_STUDIO = "'response_format.type' must be 'json_schema' or 'text'"


async def test_a_strict_schema_is_asked_first_then_json_mode_then_plain_text(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm, max_proposals_per_run=2)
    async with gateway(settings) as gw:
        shown = [await gw.seed(), await gw.seed()]
        fake_llm.error(400, message="json_schema is not supported by this server")
        fake_llm.error(400, message="response_format json_object is not supported")
        fake_llm.reply(answer(proposal()))
        run = await gw.synthesize()
        assert run["status"] == "ok" and len(run["proposed"]) == 1
        formats = [r.get("response_format") for r in fake_llm.requests]
        assert formats[0]["type"] == "json_schema" and formats[0]["json_schema"]["strict"]
        schema = formats[0]["json_schema"]["schema"]
        assert schema["required"] == ["proposals"] and schema["additionalProperties"] is False
        proposals = schema["properties"]["proposals"]
        draft = proposals["items"]
        assert draft["required"] == list(draft["properties"]) and not draft["additionalProperties"]
        # The real bounds, so a constraining server stops a runaway field at its limit.
        fields = draft["properties"]
        assert proposals["maxItems"] == 2  # SKILLGATE_MAX_PROPOSALS_PER_RUN
        existing, new = fields["name"]["anyOf"]  # an enabled skill's name, or a new slug
        assert existing["enum"] == ["summarize-text", "troubleshooting-steps", "writing-for-chat"]
        assert fields["target"]["anyOf"] == [existing, {"type": "null"}]
        assert re.fullmatch(new["pattern"], "keep-chat-answers-short")
        for bad in ("A b", "two--hyphens", "-edge", "five-words-are-one-too", "x" * 16):
            assert not re.fullmatch(new["pattern"], bad), bad
        assert fields["description"]["maxLength"] == 1024
        assert fields["content"]["maxLength"] == settings.max_skill_bytes
        assert fields["based_on"]["items"]["enum"] == shown  # only sessions it was shown
        assert fields["kind"]["enum"] == ["create", "update"]
        assert fields["allowed_tools"]["maxItems"] == 0  # no tools are configured
        assert fake_llm.requests[0]["temperature"] == settings.synthesis_temperature
        assert formats[1] == {"type": "json_object"}
        assert formats[2] is None  # plain text: the contract is in the prompt
        # Remembered: the next pass asks in plain text at once.
        await gw.seed()
        fake_llm.reply(answer())
        await gw.synthesize()
        assert fake_llm.requests[-1].get("response_format") is None


async def test_the_json_mode_a_model_takes_is_remembered_in_the_database_across_restarts(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    async with gateway(settings) as gw:
        await gw.seed()
        fake_llm.error(400, message=LM_STUDIO.replace("json_schema", "json_object"))
        fake_llm.reply(answer(proposal()))
        assert len((await gw.synthesize())["proposed"]) == 1
        assert fake_llm.requests[-1]["response_format"] == {"type": "json_object"}
    async with gateway(settings) as gw:
        await gw.seed()
        asked, checked = len(fake_llm.requests), len(fake_llm.same_claim_requests)
        units = proposal("unit-conversions", description="Convert units.", content="Metric first.")
        fake_llm.reply(answer(units))
        await gw.synthesize()
        (sent,) = fake_llm.requests[asked:]
        assert sent["response_format"] == {"type": "json_object"}  # not json_schema again
        # The same-claim question follows the same model's remembered mode.
        (question,) = fake_llm.same_claim_requests[checked:]
        assert question["response_format"] == {"type": "json_object"}


async def test_json_with_prose_and_thinking_around_it_is_used(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    async with gateway(settings) as gw:
        await gw.seed()
        fake_llm.reply(
            "<think>Users dislike long answers.</think>Here is my answer:\n"
            + answer(proposal())
            + "\nI hope this helps!"
        )
        run = await gw.synthesize()
        assert run["status"] == "ok" and [p["name"] for p in run["proposed"]] == ["chat-brevity"]


async def test_synthesis_asks_for_room_sized_from_the_proposal_limits(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm, max_proposals_per_run=2)
    async with gateway(settings) as gw:
        await gw.seed()
        fake_llm.reply(answer())
        await gw.synthesize()
    sent = fake_llm.requests[-1]["max_tokens"]
    assert sent == answer_tokens(2, settings.max_skill_bytes) > settings.llm_max_tokens


async def test_a_batch_the_model_cannot_answer_is_skipped_after_bounded_attempts(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    async with gateway(settings) as gw:
        sid = await gw.seed()
        for attempt in range(1, BATCH_ATTEMPTS):
            fake_llm.reply("I cannot do that.")
            run = await gw.synthesize()
            assert run["status"] == "failed"
            assert f"attempt {attempt} of {BATCH_ATTEMPTS}" in run["error"]
        fake_llm.reply("I cannot do that.")
        run = await gw.synthesize()
        assert run["status"] == "ok" and "skipped a batch of 1 session" in run["error"]
        _, runs = await gw.call("GET", "/runs")
        assert "skipped a batch" in runs[0]["error"]
        # The skipped sessions are not sent again; a new one is.
        asked = len(fake_llm.requests)
        await gw.synthesize()
        assert len(fake_llm.requests) == asked
        await gw.seed()
        fake_llm.reply(answer())
        await gw.synthesize()
        assert f'session="{sid}"' not in evidence_prompt(fake_llm.requests[-1])


async def test_a_synthesis_answer_cut_at_the_token_limit_says_so(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    async with gateway(settings) as gw:
        await gw.seed()
        fake_llm.cut('{"proposals": [{"kind": "create", "name": "chat-bre')
        run = await gw.synthesize()
        assert run["status"] == "failed" and "cut at the answer limit of" in run["error"]
        assert "LLM_CONTEXT_TOKENS" in run["error"]  # what to set so that it fits


async def test_a_small_context_gets_batches_and_an_answer_that_fit_it(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm, llm_context_tokens=4096)
    async with gateway(settings) as gw:
        await gw.seed()
        fake_llm.reply(answer())
        await gw.synthesize()
        sent = fake_llm.requests[-1]
        assert answer_tokens(3, settings.max_skill_bytes) > 4096  # unfitted, it would not fit
        assert 256 <= sent["max_tokens"] <= 4096 // 2
        await gw.seed()
        fake_llm.cut('{"proposals": [{"kind": "create", "name": "chat-bre')
        run = await gw.synthesize()
    # Cut short of its max_tokens: the server's context was full, and the run says so.
    assert run["status"] == "failed"
    assert "cut at the model's context of 4096 tokens (LLM_CONTEXT_TOKENS" in run["error"]
    assert "SKILLGATE_SYNTHESIS_BATCH_TOKENS" in run["error"]


async def test_the_context_the_server_reports_at_start_sizes_synthesis(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.model_fields = {"meta": {"n_ctx": 4096}}  # llama.cpp's way of saying it
    settings = synth_settings(make_settings, fake_llm)
    app = build_app(settings, channels=[], watch=True)  # as serve builds it
    async with TestClient(TestServer(app)) as client:
        await client.get("/healthz")  # the look waits for the first answer
        assert await asyncio.wait_for(app[MODEL_LOOK], 10) is True
        gw = Gateway(client)
        await gw.seed()
        fake_llm.reply(answer())
        run = await gw.synthesize()
    assert run["status"] == "ok"
    sent = [r for r in fake_llm.requests if r.get("response_format")][-1]
    assert answer_tokens(3, settings.max_skill_bytes) > 4096
    assert 256 <= sent["max_tokens"] <= 4096 // 2


async def test_a_model_that_takes_only_its_default_temperature_is_asked_without_one(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    async with gateway(settings) as gw:
        await gw.seed()
        fake_llm.error(
            400,
            message="Unsupported value: 'temperature' does not support 0.2 with this model."
            " Only the default (1) value is supported.",
        )
        fake_llm.reply(answer(proposal()))
        run = await gw.synthesize()
        assert run["status"] == "ok" and len(run["proposed"]) == 1, run
        refused, retried = fake_llm.requests
        assert refused["temperature"] == 0.2 and "temperature" not in retried
        assert retried["response_format"]["type"] == "json_schema"  # the schema still stands
        await gw.seed()
        fake_llm.reply(answer())
        await gw.synthesize()
        assert "temperature" not in fake_llm.requests[-1]  # not asked again


async def test_a_synthesis_answer_cut_by_the_streams_time_limit_names_that_limit_not_the_context(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(
        make_settings, fake_llm, llm_context_tokens=4096, llm_stream_max_seconds=1
    )
    async with gateway(settings) as gw:
        await gw.seed()
        fake_llm.flood('{"proposals": [', interval=0.01)  # slow, never quiet, never done
        run = await gw.synthesize()
        assert run["status"] == "failed"
        assert "the stream's time limit of 1 s (LLM_STREAM_MAX_SECONDS)" in run["error"]
        assert "context" not in run["error"] and "LLM_CONTEXT_TOKENS" not in run["error"]
        assert "attempt" not in run["error"]  # our own limit: the sessions' tries are kept
        assert await gw.parts.store.get_meta(FAILED_BATCH_KEY) in (None, "{}")
        (record,) = await gw.parts.store.list_runs(1)
        assert record.sessions == 1  # what it read and showed the model, though it failed
        await sign_in(gw.client)
        page = await (await gw.client.get(f"/admin/runs/{record.id}")).text()
        assert "<dd>1 session in 1 batch</dd>" in page
        assert "not reported by the model" in page and "0 + 0" not in page


async def test_a_model_outage_during_synthesis_uses_up_no_attempt_of_its_sessions(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm, llm_max_retries=0)
    async with gateway(settings) as gw:
        await gw.seed()
        for _ in range(BATCH_ATTEMPTS + 1):
            fake_llm.error(500, message="engine is dead")
            run = await gw.synthesize()
            assert run["status"] == "failed" and "attempt" not in run["error"]
        assert await gw.parts.store.get_meta(FAILED_BATCH_KEY) in (None, "{}")
        fake_llm.reply(answer())
        run = await gw.synthesize()
        assert run["status"] == "ok"
        (record,) = await gw.parts.store.list_runs(1)
        assert record.sessions == 1  # the same session, read once the model is back
