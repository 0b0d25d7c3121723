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
    one_line,
    parse_completion,
    peek,
)
from gateway.core.stream import PartialText
from gateway.errors import ModelError
from gateway.logs import mask

DONE = b"[DONE]"


class EventStream:
    """Each server-sent event's data, fed the pieces of the body as they arrive, up to `[DONE]`.

    Lines end with LF, CRLF or CR; an event's `data:` lines are joined with LF and it ends
    at a blank line (or at the end of the body, `end`). Fed synchronously, piece by piece:
    an answer's dozen pieces cost no generator frames. After `[DONE]` it is `done` and
    takes no more, so the caller reads the body to its end and the connection goes back to
    the pool.
    """

    __slots__ = ("_buffer", "_data", "done")

    def __init__(self) -> None:
        self._buffer = b""
        self._data: list[bytes] = []
        self.done = False

    def feed(self, piece: bytes) -> list[bytes]:
        """The events this piece completes."""
        if self.done:
            return []
        if (
            not self._buffer
            and not self._data
            and piece.startswith(b"data: ")
            and piece.endswith(b"\n\n")
            and b"\r" not in piece
        ):
            # Nearly every piece: whole events of one `data: ` line each, split in one go
            # when the blank lines between them are its only line ends.
            events = piece[6:-2].split(b"\n\ndata: ")
            if piece.count(b"\n") == 2 * len(events):
                if DONE in piece:
                    for n, event in enumerate(events):
                        if event.startswith(DONE):
                            self.done = True
                            return events[:n]
                return events
        events = []
        buffer = self._buffer + piece
        if b"\r" in buffer:
            held = buffer.endswith(b"\r")  # maybe half of a CRLF: wait for the next piece
            body = buffer[:-1] if held else buffer
            buffer = body.replace(b"\r\n", b"\n").replace(b"\r", b"\n") + (b"\r" if held else b"")
        *lines, self._buffer = buffer.split(b"\n")
        self._lines(lines, events)
        return events

    def _lines(self, lines: list[bytes], events: list[bytes]) -> None:
        """Whole lines, each event they end added to `events`."""
        data = self._data
        for line in lines:
            if line:
                if line.startswith(b"data:"):
                    value = line[5:]
                    data.append(value[1:] if value[:1] == b" " else value)
                continue
            if data:
                event = data[0] if len(data) == 1 else b"\n".join(data)
                data = []
                if event.startswith(DONE):
                    self.done = True
                    break
                events.append(event)
        self._data = data

    def end(self) -> list[bytes]:
        """The event the body ended in without its blank line, if any."""
        if self.done:
            return []
        buffer = self._buffer.removesuffix(b"\r")
        data = self._data
        if buffer.startswith(b"data:"):
            data.append(buffer[6:] if buffer[5:6] == b" " else buffer[5:])
        self._buffer, self._data = b"", []
        return [b"\n".join(data)] if data and not data[0].startswith(DONE) else []


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

    def __init__(self, partial: PartialText | None = None, secrets: tuple[str, ...] = ()) -> None:
        self.partial = partial
        self._secrets = secrets
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
            message = one_line(mask(error_message(chunk), self._secrets))
            error = chunk["error"]
            code = error.get("code") if isinstance(error, dict) else None
            status = code if isinstance(code, int) and not isinstance(code, bool) else 0
            raise classify(status, message)(f"model streamed an error: {message}")
        usage, model, choices = chunk.get("usage"), chunk.get("model"), chunk.get("choices")
        if isinstance(usage, dict):
            self._usage = usage
        if isinstance(model, str):
            self._model = model
        if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
            return  # the usage chunk, or a keep-alive
        choice = choices[0]
        finish = choice.get("finish_reason")
        if isinstance(finish, str):
            self._finish = finish
        delta = choice.get("delta") or choice.get("message")
        if not isinstance(delta, dict):
            return
        content = delta.get("content")
        if isinstance(content, str) and (len(delta) == 1 or (len(delta) == 2 and "role" in delta)):
            # Nearly every chunk: a piece of text and nothing else to look for.
            self._text(content)
        else:
            self._delta(delta)

    def _text(self, piece: str) -> None:
        self._has_content = True
        if piece:
            self._content.append(piece)
            if self.partial is not None:
                self.partial.add(piece)

    def _delta(self, delta: dict[str, Any]) -> None:
        content = delta.get("content")
        if content is not None:
            self._text(content_text(content) or "")
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
        calls = [c.message() for c in self._calls.values() if c.name]
        legacy = self._legacy if self._legacy is not None and self._legacy.name else None
        # The first delta's `content: ""` is no text: a call alone reads as a whole one does.
        empty = "" if self._has_content and not (calls or legacy) else None
        message: dict[str, Any] = {
            "role": "assistant",
            "content": "".join(self._content) if self._content else empty,
        }
        if self._reasoning:
            message["reasoning_content"] = "".join(self._reasoning)
        if calls:
            message["tool_calls"] = calls
        if legacy is not None:
            message["function_call"] = legacy.message()["function"]
        body: dict[str, Any] = {
            "choices": [{"index": 0, "message": message, "finish_reason": self._finish}],
            "model": self._model or model,
        }
        if self._usage is not None:
            body["usage"] = self._usage
        return parse_completion(body, model)
