"""`doctor` probes the model with tiny real requests: yes, ignored or refused, and the fix."""

from __future__ import annotations

from collections.abc import Callable

from gateway.config import Settings
from gateway.operator import Check
from gateway.ops.doctor import check_model
from gateway.ops.init.model import check_model as check_model_at
from tests.fakes.openai_server import FakeOpenAI
from tests.serve_process import free_port

VLLM_TOOLS = (
    '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
)


async def probed(settings: Settings) -> dict[str, Check]:
    return {c.name: c for c in await check_model(settings)}


async def test_a_capable_server_gets_yes_for_each_and_its_context_size(
    settings: Settings, fake_llm: FakeOpenAI
) -> None:
    fake_llm.model_fields = {"meta": {"n_ctx": 8192}}  # llama.cpp's way of saying it
    fake_llm.reply("OK")
    fake_llm.tool_call("load_skill", name="greeting")
    fake_llm.reply('{"ok": true}')
    checks = await probed(settings)
    assert [c.status for c in checks.values()] == ["ok"] * 6
    assert checks["same-claim judge"].detail.startswith("fake-model on the same-claim question:")
    assert "able to judge: 16 of 16 right" in checks["same-claim judge"].detail
    # The trial's judge is the same model, calibrated on comparing answers.
    assert checks["trial judge"].detail.startswith("fake-model on the trial question:")
    assert "able to judge: 16 of 16 right" in checks["trial judge"].detail
    assert "context 8192 tokens" in checks["model"].detail
    assert checks["model chat"].detail.startswith("yes")
    assert checks["model tools"].detail.startswith("yes")
    assert checks["model JSON"].detail == "yes: json_schema"
    chat, tools, json_mode = fake_llm.requests
    assert chat["max_tokens"] <= 16 and tools["tool_choice"] == "auto"
    assert json_mode["response_format"]["type"] == "json_schema"
    assert json_mode["response_format"]["json_schema"]["strict"] is True


async def test_tools_and_json_taken_but_not_done_are_reported_as_ignored(
    settings: Settings, fake_llm: FakeOpenAI
) -> None:
    checks = await probed(settings)  # the fake answers plain text to everything
    assert checks["model chat"].status == "ok"
    assert checks["model tools"].status == "warn"
    assert checks["model tools"].detail.startswith("ignored")
    assert "--jinja" in checks["model tools"].fix
    assert checks["model JSON"].detail.startswith("ignored")
    assert "context size not reported" in checks["model"].detail


async def test_refusals_carry_the_servers_words_and_the_fix(
    settings: Settings, fake_llm: FakeOpenAI
) -> None:
    fake_llm.model_fields = {"context_length": 2048}
    fake_llm.reply("OK")
    fake_llm.error(400, message=VLLM_TOOLS)
    fake_llm.reply("I answer in text.")  # the same probe, sent again without tools
    fake_llm.error(400, message="json_schema is not supported by this server")
    fake_llm.reply('{"ok": true}')
    checks = await probed(settings)
    assert checks["model"].status == "warn" and "2048" in checks["model"].detail
    assert "OLLAMA_CONTEXT_LENGTH" in checks["model"].fix
    tools = checks["model tools"]
    assert tools.status == "warn" and tools.detail.startswith("refused")
    assert "--enable-auto-tool-choice" in tools.detail and "--tool-call-parser" in tools.fix
    json_check = checks["model JSON"]
    assert json_check.status == "ok" and json_check.detail.startswith("yes: json_object; the")


async def test_a_refused_connection_is_not_called_a_timeout(
    make_settings: Callable[..., Settings],
) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    checks = await probed(make_settings(llm_base_url=url, llm_model="m"))
    assert checks["model"].status == "fail"
    assert "connection refused" in checks["model"].detail
    assert "start the model server" in checks["model"].fix


async def test_a_base_url_without_v1_gets_a_hint(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    url = fake_llm.base_url.removesuffix("/v1")
    checks = await probed(make_settings(llm_base_url=url, llm_model="fake-model"))
    assert checks["model"].status == "fail"
    assert "HTTP 404" in checks["model"].detail and "/v1" in checks["model"].detail


async def test_a_slow_model_is_timed_out_after_llm_timeout_seconds_not_called_unreachable(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = make_settings(
        llm_base_url=fake_llm.base_url, llm_model="fake-model", llm_timeout_seconds=0.5
    )
    fake_llm.stall(3)
    chat = (await probed(settings))["model chat"]
    assert chat.status == "fail"
    assert chat.detail == "model timed out after 0.5 s (it sent nothing)"
    assert "connection failed" not in chat.detail and "refused" not in chat.detail
    assert chat.fix is not None and "LLM_TIMEOUT_SECONDS" in chat.fix


async def test_a_tools_request_that_fails_once_is_tried_again_as_the_gateway_does(
    settings: Settings, fake_llm: FakeOpenAI
) -> None:
    fake_llm.reply("OK")
    fake_llm.error(503, message="the engine restarted")  # the tools request, once
    fake_llm.tool_call("load_skill", name="greeting")
    fake_llm.reply('{"ok": true}')
    checks = await probed(settings)
    assert checks["model"].status == "ok"
    assert checks["model tools"].status == "ok", checks["model tools"]


async def test_a_failed_tools_request_is_not_called_a_refusal(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = make_settings(
        llm_base_url=fake_llm.base_url, llm_model="fake-model", llm_max_retries=0
    )
    fake_llm.reply("OK")
    fake_llm.error(500, message="engine is dead")
    fake_llm.reply('{"ok": true}')
    tools = (await probed(settings))["model tools"]
    assert tools.status == "warn" and tools.detail.startswith("not known: the tools request failed")
    assert "--jinja" not in (tools.fix or "") and "again" in (tools.fix or "")


async def test_the_on_board_model_is_told_plainly_skills_do_not_load_and_no_server_flag(
    fake_llm: FakeOpenAI,
) -> None:
    fake_llm.reply("OK")
    fake_llm.reply("I answer in text.")  # a tiny model does not call the tool
    fake_llm.reply('{"ok": true}')
    checks = {
        c.name: c
        for c in await check_model_at(fake_llm.base_url, "fake-model", None, on_board=True)
    }
    tools = checks["model tools"]
    assert tools.status == "warn" and "skills will not load" in tools.detail
    fix = tools.fix or ""
    assert "never loaded" in fix and "skillgate init" in fix
    assert not any(
        flag in fix for flag in ("--jinja", "vLLM", "Ollama", "--enable-auto-tool-choice")
    )
