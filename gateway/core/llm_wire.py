"""What OpenAI-compatible servers actually answer, read into one shape.

Servers differ from the reference API in small ways: a tool call without an
`id`, `arguments` as an object, `content` as a list of parts, the legacy
`function_call`, reasoning as `reasoning_content`, `reasoning` or a `<think>`
block in the content, or an error object inside an HTTP 200. Everything
usable is normalised here; anything else raises ModelError, so a caller
always has a Completion or a ModelError and never a validation traceback.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

from pydantic import BaseModel, Field

from gateway.errors import (
    ContextOverflow,
    JsonModeUnsupported,
    ModelError,
    ModelUnavailable,
    ToolsUnsupported,
    VisionUnsupported,
)
from gateway.logs import mask

MESSAGE_CHARS = 300
_THINK = re.compile(r"<think>.*?</think>\s*", re.DOTALL | re.IGNORECASE)
_OPEN_THINK = re.compile(r"<think>.*\Z", re.DOTALL | re.IGNORECASE)
_OVERFLOW = (
    "context length",
    "context_length",
    "context window",
    "maximum context",
    "too many tokens",
    "prompt is too long",
    "exceeds the available context",
    "exceed_context",
    "n_ctx",
    "reduce the length",
)
_TOOLS = (
    "does not support tools",
    "tool choice",
    "tool_choice",
    "enable-auto-tool-choice",
    "tool-call-parser",
    "tools are not supported",
    "tool calling is not supported",
    "tool_use_failed",
    "function calling",
)
_JSON = ("response_format", "json_object", "json_schema", "json mode")
_VISION = (
    "image_url is only supported by certain models",  # OpenAI
    "unknown variant `image_url`",  # DeepSeek
    "image input",  # llama.cpp without its mmproj ("image input is not supported"), Ollama
    "does not support image",  # LM Studio, Ollama
    "not a multimodal model",  # vLLM
    "image(s) may be provided",  # vLLM: "At most 0 image(s) may be provided"
    "images are not supported",
    "vision is not supported",
)


class ToolCall(BaseModel):
    """A function call the model asked for."""

    id: str
    name: str
    arguments: str = "{}"

    def args(self) -> dict[str, Any]:
        """Arguments as a dict; {} when the model sent something that is not a JSON object."""
        try:
            value = json.loads(self.arguments or "{}")
        except json.JSONDecodeError:
            return {}
        return value if isinstance(value, dict) else {}


class Completion(BaseModel):
    """One model answer: text, or tool calls, and the tokens it cost."""

    text: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    usage_known: bool = False
    """The server reported the tokens (an answer without `usage` is unknown, not free)."""
    model: str | None = None
    finish_reason: str | None = None
    # Only ever sent back within the same turn's tool round; never shown or stored.
    reasoning: str | None = None
    notes: list[str] = Field(default_factory=list)
    cut_by: str | None = None
    """The gateway's own bound that stopped a streamed answer, with its setting (None: the
    server ended it, `finish_reason` says how)."""


def one_line(text: str) -> str:
    """`text` on one line of at most MESSAGE_CHARS characters (what a server said, briefly)."""
    text = " ".join(text.split())
    return text if len(text) <= MESSAGE_CHARS else text[: MESSAGE_CHARS - 1] + "…"


def error_message(body: Any) -> str:
    """The human part of an error body, whatever shape the server chose."""
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, str):
            return inner
        if isinstance(inner, dict):
            for key in ("message", "msg", "detail", "error"):
                value = inner.get(key)
                if isinstance(value, str) and value:
                    code = inner.get("code")
                    return f"{value} ({code})" if isinstance(code, str) and code else value
        for key in ("message", "detail"):
            value = body.get(key)
            if isinstance(value, str) and value:
                return value
        return json.dumps(body)[:MESSAGE_CHARS]
    if isinstance(body, str):
        return body
    return ""


def classify(status: int, message: str) -> type[ModelError]:
    """The error class a refusal with this status and message stands for."""
    lowered = message.lower()
    if status != 429 and any(k in lowered for k in _VISION):
        # llama.cpp answers this with a 500; no retry makes the model see.
        return VisionUnsupported
    if status == 429 or status >= 500 or "overloaded" in lowered or "rate limit" in lowered:
        # A context overflow is sometimes a 500 (llama.cpp), and is never transient.
        return ContextOverflow if any(k in lowered for k in _OVERFLOW) else ModelUnavailable
    if any(k in lowered for k in _OVERFLOW):
        return ContextOverflow
    if any(k in lowered for k in _TOOLS):
        return ToolsUnsupported
    if any(k in lowered for k in _JSON):
        return JsonModeUnsupported
    return ModelError


def strip_think(text: str) -> tuple[str, str | None]:
    """Content without `<think>` blocks, and what they held."""
    if "<" not in text:
        return text, None
    found = [m.group(0) for m in _THINK.finditer(text)]
    text = _THINK.sub("", text)
    unclosed = _OPEN_THINK.search(text)
    if unclosed:  # cut off mid-thought: nothing after it is an answer
        found.append(unclosed.group(0))
        text = text[: unclosed.start()]
    if not found:
        return text, None
    thought = "\n".join(re.sub(r"(?i)</?think>", "", f).strip() for f in found)
    return text.strip(), thought or None


def parse_completion(data: Any, model: str | None) -> Completion:
    """A Completion from a decoded response body; ModelError when nothing usable is in it."""
    if not isinstance(data, dict):
        raise ModelError(f"model answered something that is not a JSON object: {peek(data)}")
    choices = data.get("choices")
    if data.get("error") and not choices:
        message = one_line(mask(error_message(data)))
        status = _int(data["error"].get("code")) if isinstance(data["error"], dict) else 0
        raise classify(status or 0, message)(f"model answered an error: {message}")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ModelError(f"model returned no choices: {peek(data)}")
    choice = choices[0]
    reply = choice.get("message") or choice.get("delta") or {}
    if not isinstance(reply, dict):
        raise ModelError(f"model returned a message that is not an object: {peek(reply)}")
    text = content_text(reply.get("content"))
    reasoning = _text(reply.get("reasoning_content")) or _text(reply.get("reasoning"))
    if text is not None:
        text, thought = strip_think(text)
        reasoning = reasoning or thought
    usage: dict[str, Any] = data["usage"] if isinstance(data.get("usage"), dict) else {}
    finish = choice.get("finish_reason")
    return Completion(
        text=text,
        tool_calls=_tool_calls(reply),
        prompt_tokens=_int(usage.get("prompt_tokens")),
        completion_tokens=_int(usage.get("completion_tokens")),
        usage_known=isinstance(usage.get("prompt_tokens"), int)
        or isinstance(usage.get("completion_tokens"), int),
        model=data.get("model") if isinstance(data.get("model"), str) else model,
        finish_reason=finish if isinstance(finish, str) else None,
        reasoning=reasoning,
    )


def content_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):  # content parts
        texts = [p if isinstance(p, str) else p.get("text") for p in value if p is not None]
        if all(isinstance(t, str) or t is None for t in texts):
            return "".join(t for t in texts if t)
    raise ModelError(f"model returned content of an unknown shape: {peek(value)}")


def _tool_calls(message: dict[str, Any]) -> list[ToolCall]:
    raw = message.get("tool_calls") or []
    if isinstance(message.get("function_call"), dict):  # the legacy single call
        raw = [*raw, {"function": message["function_call"]}] if isinstance(raw, list) else raw
    if not isinstance(raw, list):
        raise ModelError(f"model returned tool_calls of an unknown shape: {peek(raw)}")
    calls = []
    for index, call in enumerate(raw):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            continue  # custom (non-function) tool calls: none are offered
        name = function.get("name")
        if not isinstance(name, str) or not name:
            raise ModelError(f"model returned a tool call without a name: {peek(call)}")
        arguments = function.get("arguments")
        if isinstance(arguments, dict | list):
            arguments = json.dumps(arguments)
        elif not isinstance(arguments, str):
            arguments = "{}"
        call_id = call.get("id")
        if not isinstance(call_id, str) or not call_id:
            call_id = f"call_{index}_{uuid.uuid4().hex[:8]}"
        calls.append(ToolCall(id=call_id, name=name, arguments=arguments or "{}"))
    return calls


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def peek(value: Any) -> str:
    return one_line(mask(json.dumps(value, default=str)[:120]))
