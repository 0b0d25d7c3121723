"""`doctor`'s model checks: tiny real requests for what the agent needs from the server.

Each capability is answered yes (ok), ignored (warn: the server took the request
but did not do it) or refused (warn or fail: with the server's own words), with
the fix for the common servers.
"""

from __future__ import annotations

import json
from typing import Any

from gateway.core.json_modes import JSON_MODES
from gateway.core.llm import OpenAIChat, context_size
from gateway.errors import ModelError, ModelUnavailable, ToolsUnsupported
from gateway.operator import Check

SMALL_CONTEXT = 4096
PROBE_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "load_skill",
        "description": "Load the instructions of one skill.",
        "parameters": {
            "type": "object",
            "properties": {"name": {"type": "string", "enum": ["greeting"]}},
            "required": ["name"],
        },
    },
}
PROBE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
}
TOOLS_FIX = (
    "vLLM: start with --enable-auto-tool-choice --tool-call-parser <parser for the model>; "
    "llama.cpp: llama-server --jinja with a model whose chat template has tool markup; "
    "Ollama: a model whose `ollama show` lists tools; or a model that can call tools"
)
ON_BOARD_TOOLS = (
    "the on-board model is too small to call tools, and its server is the gateway's own:"
    " skills are offered but never loaded. For skills, a model that calls tools:"
    " `skillgate init` (or LLM_BASE_URL and LLM_MODEL)"
)
FAILED_FIX = (
    "the request failed, which says nothing of tools: run `skillgate doctor` again, and read"
    " the model server's log if it repeats"
)
JSON_FIX = (
    "synthesis asks for a strict JSON schema, then JSON mode, then plain text with the "
    "contract in the prompt; a server that constrains output to a schema makes it reliable"
)
CONTEXT_FIX = (
    "give the model a larger context: Ollama OLLAMA_CONTEXT_LENGTH=8192 (or num_ctx), "
    "llama.cpp -c 8192, vLLM --max-model-len 8192"
)


async def probe(llm: OpenAIChat, *, on_board: bool = False) -> list[Check]:
    """Reachability and context size, then chat, tools and JSON mode, each one tiny request.

    `llm` is built as the gateway builds its own (`runtime.assembly.chat_client`: the same
    retries), so a probe fails where an answer would. `on_board`: the model the gateway
    starts itself (LLM_LOCAL_MODEL), whose server flags nobody can change.
    """
    where = f"{llm.model} at {llm.base_url}"
    try:
        models = await llm.models()
    except ModelUnavailable as exc:
        return [Check("model", "fail", f"{llm.base_url}: {exc}", _unreachable_fix(str(exc)))]
    except ModelError as exc:
        return [
            Check(
                "model",
                "fail",
                f"{llm.base_url}: {exc}",
                "check LLM_BASE_URL (ending in /v1), LLM_MODEL and LLM_API_KEY; `skillgate init`"
                " tries them as you change them",
            )
        ]
    names = [str(m.get("id")) for m in models]
    if names and llm.model not in names:
        return [
            Check(
                "model",
                "fail",
                f"{llm.base_url} does not serve {llm.model!r} (it has: {', '.join(names[:5])})",
                "set LLM_MODEL to one of the names it lists (`skillgate init` offers them)",
            )
        ]
    checks = [_context(where, next((m for m in models if m.get("id") == llm.model), None))]
    chat = await _chat(llm)
    checks.append(chat)
    if chat.status != "fail":
        checks.append(await _tools(llm, ON_BOARD_TOOLS if on_board else TOOLS_FIX))
        checks.append(await _json(llm))
    return checks


def _context(where: str, entry: dict[str, Any] | None) -> Check:
    size = context_size(entry or {})
    if size is None:
        return Check("model", "ok", f"{where}: reachable; context size not reported")
    if size < SMALL_CONTEXT:
        return Check("model", "warn", f"{where}: context of only {size} tokens", CONTEXT_FIX)
    return Check("model", "ok", f"{where}: reachable; context {size} tokens")


async def _chat(llm: OpenAIChat) -> Check:
    messages = [{"role": "user", "content": "Reply with the single word OK."}]
    try:
        done = await llm.complete(messages, max_tokens=16)
    except ModelError as exc:
        said = str(exc) if "timed out" in str(exc) else f"refused: {exc}"
        return Check("model chat", "fail", said, _unreachable_fix(str(exc)))
    if not (done.text or "").strip():
        return Check(
            "model chat",
            "warn",
            f"answered nothing (finish_reason {done.finish_reason})",
            "check the model: it may only think, or need a larger LLM_MAX_TOKENS",
        )
    return Check(
        "model chat",
        "ok",
        f"yes: answered in {done.completion_tokens} token(s), finish_reason {done.finish_reason}",
    )


async def _tools(llm: OpenAIChat, fix: str) -> Check:
    messages = [
        {
            "role": "user",
            "content": "Call the load_skill tool with the name greeting. Do not write text.",
        }
    ]
    try:
        done = await llm.complete(messages, tools=[PROBE_TOOL], max_tokens=64)
    except ToolsUnsupported as exc:
        return Check("model tools", "warn", f"refused: {exc}; skills will not load", fix)
    except ModelError as exc:
        # A dropped connection or a 5xx is not a refusal: the tools are not known either way.
        return Check(
            "model tools", "warn", f"not known: the tools request failed: {exc}", FAILED_FIX
        )
    if llm.tools_refused is not None:
        return Check(
            "model tools",
            "warn",
            f"refused: {llm.tools_refused}; the agent answers without skills",
            fix,
        )
    if done.tool_calls:
        return Check("model tools", "ok", f"yes: the model called {done.tool_calls[0].name}")
    return Check(
        "model tools",
        "warn",
        "ignored: the server took the tools but the model answered in text; skills will not load",
        fix,
    )


async def _json(llm: OpenAIChat) -> Check:
    messages = [{"role": "user", "content": 'Answer with the JSON object {"ok": true}.'}]
    try:
        done = await llm.complete(messages, json_mode=True, json_schema=PROBE_SCHEMA, max_tokens=32)
    except ModelError as exc:
        return Check("model JSON", "warn", f"refused: {exc}", JSON_FIX)
    mode = llm.json_mode
    try:
        parsed = json.loads((done.text or "").strip())
    except json.JSONDecodeError:
        parsed = None
    refused = (
        f"; the server refused the stricter modes ({mode} now)" if mode != JSON_MODES[0] else ""
    )
    if mode == "text":
        return Check("model JSON", "warn", f"refused: JSON mode{refused}", JSON_FIX)
    if isinstance(parsed, dict):
        return Check("model JSON", "ok", f"yes: {mode}{refused}")
    return Check(
        "model JSON",
        "warn",
        f"ignored: {mode} was accepted but the answer is not a JSON object",
        JSON_FIX,
    )


def _unreachable_fix(detail: str) -> str:
    if "refused" in detail:
        return (
            "start the model server, or fix the host and port in LLM_BASE_URL"
            " (`skillgate init` tries them)"
        )
    if "timed out" in detail or "went quiet" in detail:
        return (
            "the server is slow or stuck: doctor waits LLM_TIMEOUT_SECONDS, as answers do;"
            " raise it for a slow model, or check the server"
        )
    return (
        "check LLM_BASE_URL (ending in /v1), LLM_MODEL and LLM_API_KEY"
        " (`skillgate init` tries them)"
    )
