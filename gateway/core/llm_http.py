"""The chat-completions POST (and `/models`) on the openai client's connection pool, without it.

Every answer makes this call, so it goes straight to the aiohttp session under the client's
transport: one request, the status, the body's bytes as they arrive. httpx's request and
response objects, header merging and stream layers over that session cost as much again as
the socket work, and the client's own (typed options, models, its SSE decoder) several times
more; the client stays for what is not hot (embeddings, speech), on the same pool. `/models`, which
the start and the alert watcher's look every minute read, is a plain GET there too, so a
gateway that only chats never imports the openai package (17 MB resident).
Transport errors become `Unreachable` (a timeout or a failed connection, the cause kept), an
HTTP error status `Refusal` with its body; `llm` decides what each means.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from gateway.core import unix_sockets

if TYPE_CHECKING:
    import ssl

    from httpx_aiohttp import AiohttpTransport
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

    def __init__(self, status: int, text: str, headers: Mapping[str, str]) -> None:
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
    """A 2xx answer being read; `read_some` and `read` report transport errors as Unreachable."""

    def __init__(self, response: Any) -> None:
        self._response = response
        self.streams = "event-stream" in response.headers.get("Content-Type", "")
        self.received = 0
        """Bytes of the body read so far, as they came off the connection (decoded, if the
        server compressed them)."""

    async def read_some(self) -> bytes:
        """The body's next bytes as they arrive (b"" at its end): the one place an answer is
        read from the socket, a call per piece rather than a generator's frames."""
        try:
            piece: bytes = await self._response.content.readany()
        except Exception as exc:
            raise _translated(exc) from exc
        self.received += len(piece)
        return piece

    async def read(self) -> str:
        """The whole body as text (an answer that is not streamed)."""
        try:
            raw: bytes = await self._response.read()
        except Exception as exc:
            raise _translated(exc) from exc
        return raw.decode(self._response.charset or "utf-8", errors="replace")


@functools.cache
def tls() -> ssl.SSLContext:
    """The verifying TLS context every model connection shares. Building one reads the CA
    bundle, 30-40 ms of CPU on the event loop, and the alert watcher makes a client for its
    look at the model every minute: a pause every chat in flight would wait out."""
    import httpx

    return httpx.create_ssl_context()


class ModelHTTP:
    """One OpenAI-compatible `/v1`: the lean chat POST, and the openai client on the same pool."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        *,
        timeout: float,
        unix_socket: str | None = None,
    ) -> None:
        self.base_url = base_url
        self.unix_socket = unix_socket
        """Where every connection goes instead of the URL's host and port (no proxy then)."""
        self._url = base_url.rstrip("/") + "/chat/completions"
        self._headers = {"Content-Type": "application/json", "Accept": "*/*"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._api_key = api_key
        self._timeout = timeout
        self._proxy: str | None = None
        self._transport: AiohttpTransport | None = None
        self._session: Any = None
        self._sdk: AsyncOpenAI | None = None

    def _pool(self) -> AiohttpTransport:
        """The transport the openai client uses; its aiohttp session serves the chat POST."""
        if self._transport is None:
            import urllib.parse
            import urllib.request

            import httpx  # here, not at start-up: it is made for the first answer

            # A proxy named in the environment is honoured, as the openai client does; a
            # server on a unix socket is this machine's, never behind one.
            parts = urllib.parse.urlsplit(self._url)
            found = urllib.request.getproxies().get(parts.scheme)
            bypass = self.unix_socket is not None or urllib.request.proxy_bypass(
                parts.hostname or ""
            )
            self._proxy = found if found and not bypass else None
            proxy = httpx.Proxy(self._proxy) if self._proxy else None
            limits = httpx.Limits(max_connections=MAX_CONNECTIONS, max_keepalive_connections=100)
            transport = unix_sockets.transport(
                self.unix_socket, limits=limits, proxy=proxy, verify=tls()
            )
            # Made now rather than on the transport's first request, so both share it.
            transport.client = self._session = transport.get_client()
            self._transport = transport
        return self._transport

    @asynccontextmanager
    async def post(self, body: dict[str, Any]) -> AsyncIterator[Reply]:
        """POST `body` to chat/completions; the reply is open while the block runs."""
        content = json.dumps(body).encode()
        if self._session is None:
            self._pool()
        # No timeout of the session's own: the caller's deadlines (first token, idle, the
        # whole stream) are the only ones. Leaving the block before the end of the body
        # closes the connection rather than handing it back half read.
        try:
            response = await self._session.post(
                self._url, data=content, headers=self._headers, proxy=self._proxy, timeout=None
            )
        except Exception as exc:
            raise _translated(exc) from exc
        async with response:
            if response.status >= 400:
                raise Refusal(response.status, await Reply(response).read(), response.headers)
            yield Reply(response)

    async def get(self, path: str) -> str:
        """GET `path` under the base URL on the same pool, within the client's timeout: the
        body's text. Transport errors are `Unreachable`, an error status a `Refusal`."""
        if self._session is None:
            self._pool()
        url = self.base_url.rstrip("/") + path
        headers = {k: v for k, v in self._headers.items() if k != "Content-Type"}
        try:
            async with asyncio.timeout(self._timeout):
                response = await self._session.get(
                    url, headers=headers, proxy=self._proxy, timeout=None
                )
                async with response:
                    text = await Reply(response).read()
        except Unreachable:
            raise
        except Exception as exc:
            raise _translated(exc) from exc
        if response.status >= 400:
            raise Refusal(response.status, text, response.headers)
        return text

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
        self._sdk = self._transport = self._session = None


def _translated(exc: Exception) -> Unreachable:
    # aiohttp's socket timeouts are TimeoutErrors; every other failure is the connection's.
    return Unreachable(str(exc) or type(exc).__name__, timed_out=isinstance(exc, TimeoutError))
