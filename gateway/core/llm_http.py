"""The chat-completions POST on the connection pool the openai client uses, without its objects.

Every answer makes this call, so it goes straight to the httpx transport under the client:
one request, the status, the body's bytes as they arrive. The client's per-call machinery
(typed options, request and response models, its SSE decoder) cost 4-5 times what the
socket work does; the client stays for what is not hot (`/models`, embeddings, speech),
on the same pool. Transport errors become `Unreachable` (a timeout or a refused connection,
the cause kept), an HTTP error status `Refusal` with its body; `llm` decides what each means.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx
    from openai import AsyncOpenAI

# As the openai client's own pool: many chats answered at once each hold a connection.
MAX_CONNECTIONS = 1000


class Unreachable(Exception):
    """No answer: the connection failed, or the transport's own timeout passed."""

    def __init__(self, message: str, *, timed_out: bool) -> None:
        super().__init__(message)
        self.timed_out = timed_out


class Refusal(Exception):
    """An HTTP error status, with the body the server sent."""

    def __init__(self, status: int, text: str, headers: httpx.Headers) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.text = text
        self.headers = headers

    @property
    def body(self) -> Any:
        """The body decoded as JSON, else its text."""
        try:
            return json.loads(self.text)
        except ValueError:
            return self.text


class Reply:
    """A 2xx answer being read; `pieces` and `read` report transport errors as Unreachable."""

    def __init__(self, response: httpx.Response) -> None:
        self._response = response
        self.streams = "event-stream" in response.headers.get("content-type", "")
        self.received = 0
        """Bytes of the body read so far, as they came off the connection."""

    async def pieces(self) -> AsyncIterator[bytes]:
        """The body's bytes as they arrive: the one place an answer is read from the socket."""
        import httpx

        response = self._response
        # Read straight from the transport unless the body needs decoding (gzip and the like):
        # httpx's layers over it cost more than the parsing, a dozen pieces an answer.
        raw = response.stream
        plain = "content-encoding" not in response.headers
        stream = raw if plain and isinstance(raw, httpx.AsyncByteStream) else response.aiter_bytes()
        try:
            async for piece in stream:
                self.received += len(piece)
                yield piece
        except Exception as exc:  # the transport lets some of aiohttp's own errors through
            raise _translated(exc) from exc

    async def read(self) -> str:
        """The whole body as text (an answer that is not streamed)."""
        try:
            await self._response.aread()
        except Exception as exc:
            raise _translated(exc) from exc
        return self._response.text


class ModelHTTP:
    """One OpenAI-compatible `/v1`: the lean chat POST, and the openai client on the same pool."""

    def __init__(self, base_url: str, api_key: str | None, *, timeout: float) -> None:
        import httpx  # here, not at start-up: it is made for the first answer

        self.base_url = base_url
        self._url = httpx.URL(base_url.rstrip("/") + "/chat/completions")
        headers = [(b"content-type", b"application/json"), (b"accept", b"*/*")]
        if api_key:
            headers.append((b"authorization", f"Bearer {api_key}".encode()))
        self._headers = httpx.Headers(headers)
        self._api_key = api_key
        self._timeout = timeout
        self._extensions = {"timeout": {"connect": timeout, "read": timeout, "pool": timeout}}
        self._transport: httpx.AsyncBaseTransport | None = None
        self._sdk: AsyncOpenAI | None = None

    def _pool(self) -> httpx.AsyncBaseTransport:
        if self._transport is None:
            import urllib.request

            import httpx
            from httpx_aiohttp import AiohttpTransport

            # A proxy named in the environment is honoured, as the openai client does.
            found = urllib.request.getproxies().get(self._url.scheme)
            bypass = urllib.request.proxy_bypass(self._url.host)
            proxy = httpx.Proxy(found) if found and not bypass else None
            limits = httpx.Limits(max_connections=MAX_CONNECTIONS, max_keepalive_connections=100)
            self._transport = AiohttpTransport(limits=limits, proxy=proxy)
        return self._transport

    @asynccontextmanager
    async def post(self, body: dict[str, Any]) -> AsyncIterator[Reply]:
        """POST `body` to chat/completions; the reply is open while the block runs."""
        import httpx

        content = json.dumps(body).encode()
        # A ready stream skips httpx's content encoding (a sixth of the call's CPU); the
        # transport fills in Host and Content-Length.
        request = httpx.Request(
            "POST",
            self._url,
            headers=self._headers,
            stream=httpx.ByteStream(content),
            extensions=self._extensions,
        )
        request.read()
        try:
            response = await self._pool().handle_async_request(request)
        except Exception as exc:
            raise _translated(exc) from exc
        try:
            if response.status_code >= 400:
                reply = Reply(response)
                raise Refusal(response.status_code, await reply.read(), response.headers)
            yield Reply(response)
        finally:
            await response.aclose()

    def sdk(self) -> AsyncOpenAI:
        """The openai client, on the same pool, for the calls that are not hot."""
        if self._sdk is None:
            from openai import AsyncOpenAI, DefaultAioHttpClient

            # Local servers (Ollama, llama.cpp) need no key, but the client insists on one.
            self._sdk = AsyncOpenAI(
                base_url=self.base_url,
                api_key=self._api_key or "not-needed",
                timeout=self._timeout,
                max_retries=0,
                http_client=DefaultAioHttpClient(transport=self._pool()),
            )
        return self._sdk

    async def close(self) -> None:
        if self._sdk is not None:
            await self._sdk.close()  # closes the pool too
        elif self._transport is not None:
            await self._transport.aclose()
        self._sdk = self._transport = None


def _translated(exc: Exception) -> Unreachable:
    import httpx

    timed_out = isinstance(exc, httpx.TimeoutException)
    return Unreachable(str(exc) or type(exc).__name__, timed_out=timed_out)
