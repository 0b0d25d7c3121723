"""A streamed answer (`stream: true`, server-sent chunks) put back together into one Completion.

Each chunk carries a `delta`: a piece of content (a string or a list of parts), of
reasoning (`reasoning_content` or `reasoning`), or of a tool call, keyed by its `index`
(some servers leave the index out, or send a whole call, with `arguments` as an object, in
one delta); the legacy `function_call` arrives the same way. The last chunks carry the
`finish_reason` and, where `stream_options.include_usage` was accepted, the `usage`. The
pieces are joined into the shape of a non-streamed response and read by `llm_wire`, so a
streamed answer is normalised exactly like a whole one (missing ids, `<think>` blocks).
"""

from __future__ import annotations

import json
from typing import Any

from gateway.core.llm_wire import (
    Completion,
    classify,
    content_text,
    error_message,
    mask,
    parse_completion,
    peek,
)
from gateway.core.stream import PartialText
from gateway.errors import ModelError


class _Call:
    """One tool call being received."""

    __slots__ = ("arguments", "id", "name")

    def __init__(self) -> None:
        self.id: str | None = None
        self.name = ""
        self.arguments: list[str] = []

    def feed(self, delta: dict[str, Any]) -> None:
        call_id = delta.get("id")
        if isinstance(call_id, str) and call_id:
            self.id = call_id
        function = delta.get("function")
        if not isinstance(function, dict):
            function = delta  # the legacy function_call is the function itself
        name = function.get("name")
        if isinstance(name, str) and name and not self.name:
            self.name = name
        arguments = function.get("arguments")
        if isinstance(arguments, dict | list):
            self.arguments = [json.dumps(arguments)]  # a whole object: it replaces, not adds
        elif isinstance(arguments, str):
            self.arguments.append(arguments)

    def message(self) -> dict[str, Any]:
        function = {"name": self.name, "arguments": "".join(self.arguments)}
        return {"id": self.id, "type": "function", "function": function}


class StreamAssembler:
    """Feeds on decoded chunks; `completion()` is the answer they add up to."""

    def __init__(self, partial: PartialText | None = None) -> None:
        self.partial = partial
        self.chunks = 0
        self._content: list[str] = []
        self._has_content = False
        self._reasoning: list[str] = []
        self._calls: dict[int | str, _Call] = {}
        self._legacy: _Call | None = None
        self._finish: str | None = None
        self._usage: dict[str, Any] | None = None
        self._model: str | None = None

    def feed(self, chunk: Any) -> None:
        """One decoded chunk; ModelError (or its kind) for an error the server streams."""
        self.chunks += 1
        if not isinstance(chunk, dict):
            raise ModelError(f"model streamed a chunk that is not a JSON object: {peek(chunk)}")
        if chunk.get("error"):
            message = mask(error_message(chunk))
            error = chunk["error"]
            code = error.get("code") if isinstance(error, dict) else None
            status = code if isinstance(code, int) and not isinstance(code, bool) else 0
            raise classify(status, message)(f"model streamed an error: {message}")
        if isinstance(chunk.get("usage"), dict):
            self._usage = chunk["usage"]
        if isinstance(chunk.get("model"), str):
            self._model = chunk["model"]
        choices = chunk.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return  # the usage chunk, or a keep-alive
        choice = choices[0]
        finish = choice.get("finish_reason")
        if isinstance(finish, str):
            self._finish = finish
        delta = choice.get("delta") or choice.get("message")
        if isinstance(delta, dict):
            self._delta(delta)

    def _delta(self, delta: dict[str, Any]) -> None:
        content = delta.get("content")
        if content is not None:
            piece = content_text(content)
            self._has_content = True
            if piece:
                self._content.append(piece)
                if self.partial is not None:
                    self.partial.add(piece)
        for key in ("reasoning_content", "reasoning"):
            value = delta.get(key)
            if isinstance(value, str) and value:
                self._reasoning.append(value)
                break
        calls = delta.get("tool_calls")
        if isinstance(calls, list):
            for position, call in enumerate(calls):
                if isinstance(call, dict):
                    self._call_for(call, position).feed(call)
        elif calls is not None:
            raise ModelError(f"model streamed tool_calls of an unknown shape: {peek(calls)}")
        legacy = delta.get("function_call")
        if isinstance(legacy, dict):
            self._legacy = self._legacy or _Call()
            self._legacy.feed(legacy)

    def _call_for(self, call: dict[str, Any], position: int) -> _Call:
        """The call this delta continues: by index, else by id, else by position."""
        index = call.get("index")
        key: int | str
        if isinstance(index, int) and not isinstance(index, bool):
            key = index
        elif isinstance(call.get("id"), str) and call["id"]:
            key = call["id"]
        else:
            key = position
        found = self._calls.get(key)
        if found is None:
            found = self._calls[key] = _Call()
        return found

    def completion(self, model: str | None) -> Completion:
        """The whole answer, read like a non-streamed response."""
        if not self.chunks:
            raise ModelError("model ended its stream without sending anything")
        message: dict[str, Any] = {
            "role": "assistant",
            "content": "".join(self._content) if self._has_content else None,
        }
        if self._reasoning:
            message["reasoning_content"] = "".join(self._reasoning)
        calls = [c.message() for c in self._calls.values() if c.name]
        if calls:
            message["tool_calls"] = calls
        if self._legacy is not None and self._legacy.name:
            message["function_call"] = self._legacy.message()["function"]
        body: dict[str, Any] = {
            "choices": [{"index": 0, "message": message, "finish_reason": self._finish}],
            "model": self._model or model,
        }
        if self._usage is not None:
            body["usage"] = self._usage
        return parse_completion(body, model)
