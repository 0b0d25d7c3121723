"""Model access through any OpenAI-compatible chat-completions endpoint.

The chat call goes straight to the connection pool the official `openai` client
uses (`llm_http`: every answer makes it, and the client's own objects cost several
times the socket work), and so does the look at `/models`. The retries are ours,
so that a timed-out chat turn is not silently re-run from scratch while the user
waits, and so that an error inside an HTTP 200 is retried like a 503. Responses
are read by `llm_wire` as raw JSON, which tolerates the shapes real servers send.
What a server refuses once (tools, a JSON mode, the `max_tokens` field, a
`temperature`, `stream_options`, streaming itself) is remembered for the process and
not asked again. The client is imported on first use: it costs about a second at start-up.

Answers are streamed (`stream: true`): a model that is slow to start gets
`first_token_timeout` seconds, and one that has started may go quiet for at
most `idle_timeout` seconds between chunks, however long its whole answer
takes. A caller that shows partial text passes a `PartialText`; the chunks
are read either way (see `llm_stream`).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable
from typing import Any, Protocol

import jiter

from gateway.core.json_modes import JSON_MODES, MEMORY_KEY, JsonModeMemory, after, response_format
from gateway.core.llm_http import ModelHTTP, Refusal, Reply, Unreachable
from gateway.core.llm_stream import EventStream, StreamAssembler
from gateway.core.llm_wire import (
    Completion,
    ToolCall,
    classify,
    error_message,
    one_line,
    parse_completion,
)
from gateway.core.stream import PartialText
from gateway.errors import (
    JsonModeUnsupported,
    ModelError,
    ModelMisconfigured,
    ModelNotConfigured,
    ModelUnavailable,
    StoreError,
    ToolsUnsupported,
)
from gateway.logs import mask

__all__ = ["LLM", "Completion", "OpenAIChat", "PartialText", "ToolCall", "UnconfiguredLLM"]
log = logging.getLogger(__name__)


class LLM(Protocol):
    """A chat model."""

    model: str | None

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        json_mode: bool = False,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int | None = None,
        retry_timeouts: bool = False,
        partial: PartialText | None = None,
        temperature: float | None = None,
    ) -> Completion: ...

    async def ping(self) -> str: ...

    async def close(self) -> None: ...


class WrappedLLM:
    """Another model, every call passed on to it; a subclass does its own part `around` each
    answer (counting, recording) and keeps the model's one signature in one place."""

    def __init__(self, llm: LLM) -> None:
        self.llm = llm

    @property
    def model(self) -> str | None:
        return self.llm.model

    @model.setter
    def model(self, value: str | None) -> None:
        self.llm.model = value

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        json_mode: bool = False,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int | None = None,
        retry_timeouts: bool = False,
        partial: PartialText | None = None,
        temperature: float | None = None,
    ) -> Completion:
        return await self.around(
            self.llm.complete(
                messages,
                tools=tools,
                json_mode=json_mode,
                json_schema=json_schema,
                max_tokens=max_tokens,
                retry_timeouts=retry_timeouts,
                partial=partial,
                temperature=temperature,
            )
        )

    async def around(self, answer: Awaitable[Completion]) -> Completion:
        """The wrapped model's answer, as this wrapper passes it on (here: unchanged)."""
        return await answer

    async def ping(self) -> str:
        return await self.llm.ping()

    async def close(self) -> None:
        await self.llm.close()


class UnconfiguredLLM:
    """Stands in when LLM_BASE_URL or LLM_MODEL is missing: every call says so."""

    model: str | None = None

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        json_mode: bool = False,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int | None = None,
        retry_timeouts: bool = False,
        partial: PartialText | None = None,
        temperature: float | None = None,
    ) -> Completion:
        raise ModelNotConfigured("no model configured: set LLM_BASE_URL and LLM_MODEL")

    async def ping(self) -> str:
        raise ModelNotConfigured("no model configured: set LLM_BASE_URL and LLM_MODEL")

    async def close(self) -> None:
        return None


class OpenAIChat:
    """An OpenAI-compatible endpoint (OpenAI, Ollama, vLLM, llama.cpp, OpenRouter, ...)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        idle_timeout: float | None = None,
        max_retries: int = 2,
        max_tokens: int | None = None,
        backoff: float = 0.5,
        json_memory: JsonModeMemory | None = None,
        stream_seconds: float = 300.0,
        stream_bytes: int = 8 * 1024 * 1024,
        unix_socket: str | None = None,
    ) -> None:
        self.base_url = base_url
        self.unix_socket = unix_socket
        """The server's unix domain socket: every connection goes there, none over TCP."""
        self.model: str | None = model
        self._api_key = api_key
        self._timeout = timeout
        """Seconds to the first chunk (and for a call that does not stream, to its answer)."""
        self._idle = idle_timeout or timeout
        """Seconds a streaming answer may go without a chunk."""
        self._max_retries = max_retries
        self._max_tokens = max_tokens
        self._stream_seconds = stream_seconds
        self._stream_bytes = stream_bytes
        """A streamed answer is cut past this long or this many bytes read, whatever
        `max_tokens` the server honours."""
        self._backoff = backoff
        self._http: ModelHTTP | None = None
        # What this server refused once, remembered for the process.
        self.tools_refused: str | None = None
        self.json_mode = JSON_MODES[0]
        self._json_memory = json_memory
        self._json_recalled = json_memory is None
        self._max_tokens_field = "max_tokens"
        self.temperature_refused = False
        """Reasoning models (OpenAI's o-series, gpt-5) take only their default temperature."""
        self.streaming = True
        self.stream_usage = True

    def _get_http(self) -> ModelHTTP:
        if self._http is None:
            # Our own deadlines (first token, idle) come first; this one bounds /models.
            timeout = max(self._timeout, self._idle) + 1.0
            self._http = ModelHTTP(
                self.base_url, self._api_key, timeout=timeout, unix_socket=self.unix_socket
            )
        return self._http

    def _secrets(self) -> tuple[str, ...]:
        return (self._api_key,) if self._api_key else ()

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        json_mode: bool = False,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int | None = None,
        retry_timeouts: bool = False,
        partial: PartialText | None = None,
        temperature: float | None = None,
    ) -> Completion:
        """One answer; what the server refuses (tools, a JSON mode) is dropped and retried."""
        notes: list[str] = []
        limit = max_tokens or self._max_tokens
        skip_tools = False
        if json_mode and not self._json_recalled:
            await self._recall_json_mode()
        call_mode = self.json_mode
        while True:
            body: dict[str, Any] = {"model": self.model, "messages": messages}
            use_tools = bool(tools) and self.tools_refused is None and not skip_tools
            if use_tools:
                body["tools"] = tools
                body["tool_choice"] = "auto"  # some servers ignore tools without it
            elif tools and self.tools_refused is not None:
                notes.append(f"tools not sent: the server refused them ({self.tools_refused})")
            mode = response_format(call_mode, json_schema) if json_mode else None
            if mode is not None:
                body["response_format"] = mode
            if limit:
                body[self._max_tokens_field] = limit
            send_temperature = temperature is not None and not self.temperature_refused
            if send_temperature:
                body["temperature"] = temperature
            try:
                completion = await self._send(body, retry_timeouts=retry_timeouts, partial=partial)
            except ToolsUnsupported as exc:
                if not use_tools:
                    raise
                if "tool_use_failed" in str(exc):
                    # The model botched one tool call (Groq): this answer goes without tools.
                    notes.append(f"answered without tools after a failed tool call: {_reason(exc)}")
                    skip_tools = True
                    continue
                self.tools_refused = _reason(exc)
                log.warning("model %s refuses tools, answering without skills: %s", self.model, exc)
                continue
            except JsonModeUnsupported as exc:
                if mode is None:
                    raise
                call_mode = after(mode)
                if json_schema is not None:
                    # Only a call with a schema tries every mode; one without asks JSON mode.
                    await self._refused_json_mode(call_mode, exc)
                continue
            except ModelError as exc:
                if "max_completion_tokens" in str(exc) and self._max_tokens_field == "max_tokens":
                    self._max_tokens_field = "max_completion_tokens"
                    continue
                if send_temperature and "temperature" in str(exc):
                    self.temperature_refused = True
                    log.warning(
                        "model %s refuses a temperature, now its default: %s", self.model, exc
                    )
                    continue
                raise
            completion.notes[:0] = notes
            if json_mode and call_mode != JSON_MODES[0]:
                completion.notes.append(f"JSON mode: {call_mode}")
            return completion

    async def _recall_json_mode(self) -> None:
        """The mode this model was left at, as the database remembers it."""
        assert self._json_memory is not None
        self._json_recalled = True
        try:
            kept = await self._json_memory.get_meta(f"{MEMORY_KEY}{self.model}")
        except StoreError as exc:  # a store that cannot answer costs one refusal, not the call
            log.warning("could not read the JSON mode kept for model %s: %s", self.model, exc)
            return
        if kept in JSON_MODES:
            self.json_mode = kept

    async def _refused_json_mode(self, mode: str, exc: ModelError) -> None:
        self.json_mode = mode
        log.warning("model %s refuses a JSON mode, now %s: %s", self.model, mode, exc)
        if self._json_memory is None:
            return
        try:
            await self._json_memory.set_meta(f"{MEMORY_KEY}{self.model}", mode)
        except StoreError as exc2:
            log.warning("could not keep the JSON mode of model %s: %s", self.model, exc2)

    async def _send(
        self, body: dict[str, Any], *, retry_timeouts: bool, partial: PartialText | None
    ) -> Completion:
        """POST with our retries: transient errors back off; a timeout only when asked."""
        attempt = 0
        while True:
            wait = self._backoff * 2**attempt
            try:
                if self.streaming:
                    return await self._stream(body, partial)
                return await self._whole(body)
            except _Stalled as exc:
                if not retry_timeouts or attempt >= self._max_retries:
                    raise ModelUnavailable(str(exc)) from exc
            except Unreachable as exc:
                refused = not exc.timed_out
                if not refused and (not retry_timeouts or attempt >= self._max_retries):
                    raise ModelUnavailable(f"model timed out after {self._timeout:g} s") from exc
                if refused and attempt >= self._max_retries:
                    raise _unreachable(_connection_cause(exc), self.base_url) from exc
            except Refusal as exc:
                message = one_line(mask(error_message(exc.body) or exc.text, self._secrets()))
                if self._refuses_streaming(exc.status, message):
                    continue  # asked again at once, without what it refused
                cls = classify(exc.status, message)
                if cls is ModelError and exc.status in (401, 403, 404):
                    cls = ModelMisconfigured  # the key, the URL or the model name
                if exc.status == 404 and not self.base_url.rstrip("/").endswith("/v1"):
                    message += " (does LLM_BASE_URL end in /v1?)"
                if cls is not ModelUnavailable or attempt >= self._max_retries:
                    raise cls(f"model answered HTTP {exc.status}: {message}") from exc
                wait = _retry_after(exc.headers) or wait
            except ModelUnavailable:
                # Also an error the server streamed after its 200 (overloaded and the like).
                if attempt >= self._max_retries:
                    raise
            attempt += 1
            await asyncio.sleep(min(wait, 8.0))

    async def _whole(self, body: dict[str, Any]) -> Completion:
        """One non-streamed call, for a server that refuses to stream."""
        try:
            async with asyncio.timeout(self._timeout), self._get_http().post(body) as reply:
                raw = await reply.read()
        except TimeoutError as exc:
            raise _Stalled(f"model timed out after {self._timeout:g} s") from exc
        return self._read_whole(raw)

    def _read_whole(self, raw: str) -> Completion:
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ModelError(
                f"model answered something that is not JSON: {one_line(mask(raw[:120]))}"
            ) from exc
        return parse_completion(data, self.model)

    async def _stream(self, body: dict[str, Any], partial: PartialText | None) -> Completion:
        """One streamed call: the first chunk within `_timeout`, each next within `_idle`; the
        whole answer cut (`_cut`) past `_stream_seconds` or `_stream_bytes` read."""
        body = body | {"stream": True}
        if self.stream_usage:
            body["stream_options"] = {"include_usage": True}
        if partial is not None:
            partial.reset()
        assembler = StreamAssembler(partial, self._secrets())
        loop = asyncio.get_running_loop()
        idle, slack = self._idle, self._idle / 8
        ends = loop.time() + self._stream_seconds
        cut: str | None = None
        try:
            async with (
                asyncio.timeout(self._timeout) as deadline,
                self._get_http().post(body) as reply,
            ):
                if not reply.streams:  # a server that ignores `stream` answers whole
                    return self._read_whole(await self._bounded_body(reply))
                events = EventStream()
                while piece := await reply.read_some():
                    if events.done:
                        continue  # read to its end: the connection goes back to the pool
                    found = events.feed(piece)
                    if found:
                        # Moving the deadline costs a timer: it is moved a little further
                        # than needed, and only once less than `idle` is left.
                        due = loop.time() + idle
                        if assembler.chunks == 0 or (deadline.when() or 0) < due:
                            deadline.reschedule(min(due + slack, ends))
                        for data in found:
                            assembler.feed(jiter.from_json(data))
                    # Bytes as read off the connection, whatever the chunks hold; leaving
                    # the block unread closes the connection.
                    if reply.received > self._stream_bytes:
                        cut = f"the stream's size limit of {self._stream_bytes:,} bytes"
                        cut += " (LLM_STREAM_MAX_MB)"
                        break
                else:
                    for data in events.end():
                        assembler.feed(jiter.from_json(data))
        except TimeoutError as exc:
            if assembler.chunks and loop.time() >= ends:
                limit = f"the stream's time limit of {self._stream_seconds:g} s"
                return _cut(assembler.completion(self.model), f"{limit} (LLM_STREAM_MAX_SECONDS)")
            if assembler.chunks == 0:
                said = f"model timed out after {self._timeout:g} s (it sent nothing)"
                raise _Stalled(said) from exc
            raise _Stalled(f"model went quiet for {idle:g} s mid-answer") from exc
        except ValueError as exc:  # jiter's error (bytes that are not UTF-8 too)
            raise ModelError(f"model streamed a chunk that is not JSON: {exc}") from exc
        if cut is not None:
            return _cut(assembler.completion(self.model), cut)
        return assembler.completion(self.model)

    async def _bounded_body(self, reply: Reply) -> str:
        """A whole answer to a streamed request, read up to `_stream_bytes`."""
        body = bytearray()
        while piece := await reply.read_some():
            body += piece
            if len(body) > self._stream_bytes:
                raise ModelError(f"model answered more than {self._stream_bytes:,} bytes")
        return body.decode("utf-8", errors="replace")

    def _refuses_streaming(self, status: int, message: str) -> bool:
        """Drop `stream_options`, then streaming, when a server says it cannot take them."""
        lowered = message.lower()
        if status not in (400, 415, 422, 501) or "stream" not in lowered:
            return False
        if self.stream_usage and "stream_options" in lowered:
            self.stream_usage = False
            log.warning("model %s refuses stream_options; usage may be missing", self.model)
            return True
        if self.streaming:
            self.streaming = False
            log.warning("model %s refuses to stream; answers arrive whole: %s", self.model, message)
            return True
        return False

    async def models(self) -> list[dict[str, Any]]:
        """The endpoint's /models list, raw; ModelError or ModelUnavailable with the cause."""
        # A plain GET on the chat call's pool: the openai client (17 MB, a second of CPU to
        # import) is not loaded for it.
        try:
            data = json.loads(await self._get_http().get("/models"))
        except json.JSONDecodeError as exc:
            raise ModelError(
                "the endpoint's /models is not JSON: does LLM_BASE_URL end in /v1?"
            ) from exc
        except Unreachable as exc:
            if exc.timed_out:
                raise ModelUnavailable(f"timed out after {self._timeout:g} s") from exc
            raise ModelUnavailable(_connection_cause(exc, self._timeout)) from exc
        except Refusal as exc:
            message = one_line(mask(error_message(exc.body) or exc.text, self._secrets()))
            hint = " (does LLM_BASE_URL end in /v1?)" if exc.status == 404 else ""
            raise ModelError(f"endpoint answered HTTP {exc.status}: {message}{hint}") from exc
        items = data.get("data") if isinstance(data, dict) else None
        return [m for m in items if isinstance(m, dict)] if isinstance(items, list) else []

    async def context(self) -> int | None:
        """The model's context as its /models entry reports it (None: not reported)."""
        entry: dict[str, Any] = next(
            (m for m in await self.models() if m.get("id") == self.model), {}
        )
        return context_size(entry)

    async def ping(self) -> str:
        """Check the endpoint answers and serves the model; a short description for `doctor`."""
        names = [str(m.get("id")) for m in await self.models()]
        if names and self.model not in names:
            raise ModelError(
                f"endpoint does not serve model {self.model!r} (it has: {', '.join(names[:5])})"
            )
        return "reachable"

    async def close(self) -> None:
        if self._http is not None:
            await self._http.close()
            self._http = None


def _unreachable(cause: str, base_url: str) -> ModelError:
    """Nothing listening, or no such host: the address is wrong, not busy (the operator's)."""
    wrong = cause in ("connection refused", "host name not found")
    cls = ModelMisconfigured if wrong else ModelUnavailable
    return cls(f"model unreachable: {cause} ({base_url})")


_CONTEXT_KEYS = ("context_length", "max_context_length", "max_model_len", "context_window")


def context_size(entry: dict[str, Any]) -> int | None:
    """The context a /models entry reports, in the shapes servers use (llama.cpp: meta.n_ctx)."""
    for source in (entry, entry.get("meta") or {}, entry.get("top_provider") or {}):
        if not isinstance(source, dict):
            continue
        for key in (*_CONTEXT_KEYS, "n_ctx"):
            value = source.get(key)
            if isinstance(value, int) and value > 0:
                return value
    return None


class _Stalled(Exception):
    """No first chunk, or no next chunk, in time."""


def _reason(exc: ModelError) -> str:
    return str(exc).split(": ", 1)[-1]


def _refused(exc: BaseException) -> OSError | None:
    """The socket error under an SDK error, when the connection itself failed."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, OSError) and not isinstance(seen, TimeoutError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def _connection_cause(exc: BaseException, timeout: float | None = None) -> str:
    """'connection refused' and friends, rather than the SDK's generic class name."""
    seen: BaseException | None = exc
    root = exc
    while seen is not None:
        root = seen
        if isinstance(seen, ConnectionRefusedError):
            return "connection refused"
        if timeout is not None and (
            isinstance(seen, TimeoutError) or "Timeout" in type(seen).__name__
        ):
            # A slow server is not a dead one: say which it was, and how long we waited.
            return f"timed out after {timeout:g} s"
        text = str(seen).lower()
        if "refused" in text:
            return "connection refused"
        if "name or service not known" in text or "nodename nor servname" in text:
            return "host name not found"
        seen = seen.__cause__ or seen.__context__
    return f"connection failed ({type(root).__name__})"  # the first failure, not its wrapper


def _retry_after(headers: Any) -> float | None:
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return float(value) * scale
        except ValueError:
            continue
    return None


def _cut(completion: Completion, limit: str) -> Completion:
    """A streamed answer stopped at a bound: shown as cut, with the bound (and its setting)
    in its trace and in `cut_by`, so that nobody blames the context for it."""
    note = f"answer cut: the stream reached {limit}"
    return completion.model_copy(
        update={"finish_reason": "length", "notes": [*completion.notes, note], "cut_by": limit}
    )
