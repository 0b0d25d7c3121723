"""python-telegram-bot's networking on aiohttp: its documented `BaseRequest` extension point.

PTB sends every Bot API call through a `BaseRequest`; its default (`HTTPXRequest`) builds
httpx request, response, header and cookie objects on every call, even on an aiohttp
transport. The gateway already runs on aiohttp, so this request class hands PTB's
encoded parameters to one pooled aiohttp session and gives back the status and the body,
which is all `BaseRequest.do_request` asks for; PTB still does the encoding, the parsing
of the answer and the error mapping (`BadRequest`, `RetryAfter`, ...) itself.

`post_fields` is the answer's own path: parameters the caller already holds as form fields
go through the same `BaseRequest.post`, so its status and error mapping still apply,
without the typed call's defaults, parameter conversion and the object built from the result.
"""

from __future__ import annotations

import re
from typing import Any

import aiohttp
from telegram.error import NetworkError, TimedOut
from telegram.request import BaseRequest, RequestData

# PTB's own parameter holder (documented as internal to PTB): a string value is sent as it
# is, so fields already encoded are not converted again.
from telegram.request._requestparameter import RequestParameter

from gateway.channels.api import MediaTooBig, MediaUnavailable

_FORM = {"Content-Type": "application/x-www-form-urlencoded"}
_TOKEN_IN_PATH = re.compile(r"/bot[^/\s]+")
_CHUNK = 64 * 1024
_DEFAULT = type(BaseRequest.DEFAULT_NONE)
"""What PTB passes for a timeout the caller left to the request's own."""


def _given(value: object, default: float | None) -> float | None:
    if isinstance(value, _DEFAULT):
        return default
    return None if value is None else float(value)  # type: ignore[arg-type]


class AiohttpRequest(BaseRequest):
    """One aiohttp session with a bounded pool; timeouts as `HTTPXRequest` takes them."""

    __slots__ = ("_connect", "_limit", "_pool", "_read", "_session")

    def __init__(self, pool_size: int = 256, timeout: float = 5.0) -> None:
        self._limit = pool_size
        self._read = self._connect = self._pool = timeout
        self._session: aiohttp.ClientSession | None = None

    @property
    def read_timeout(self) -> float | None:
        return self._read

    async def initialize(self) -> None:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self._limit),
                headers={"User-Agent": self.USER_AGENT},
            )

    async def shutdown(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None

    async def do_request(
        self,
        url: str,
        method: str,
        request_data: RequestData | None = None,
        read_timeout: object = BaseRequest.DEFAULT_NONE,
        write_timeout: object = BaseRequest.DEFAULT_NONE,
        connect_timeout: object = BaseRequest.DEFAULT_NONE,
        pool_timeout: object = BaseRequest.DEFAULT_NONE,
    ) -> tuple[int, bytes]:
        session = self._session
        if session is None or session.closed:
            raise RuntimeError("This AiohttpRequest is not initialized!")
        read = _given(read_timeout, self._read)
        connect = _given(connect_timeout, self._connect)
        pool = _given(pool_timeout, self._pool)
        # aiohttp's `connect` covers waiting for a pooled connection and opening one.
        waiting = None if pool is None or connect is None else pool + connect
        timeout = aiohttp.ClientTimeout(
            total=None, connect=waiting, sock_connect=connect, sock_read=read
        )
        data: aiohttp.FormData | bytes | None = None
        headers = None
        if request_data is not None:
            files = request_data.multipart_data
            if files:
                form = aiohttp.FormData(request_data.json_parameters)
                for name, (filename, content, mime) in files.items():
                    form.add_field(name, content, filename=filename, content_type=mime)
                data = form
            else:
                data, headers = request_data.url_encoded_parameters().encode(), _FORM
        try:
            async with session.request(
                method, url, data=data, headers=headers, timeout=timeout
            ) as response:
                return response.status, await response.read()
        except TimeoutError as err:
            raise TimedOut from err
        except aiohttp.ClientError as err:
            # aiohttp may quote the URL, whose path carries the bot's token.
            text = _TOKEN_IN_PATH.sub("/bot<token>", f"aiohttp.{type(err).__name__}: {err}")
            raise NetworkError(text) from err

    async def post_fields(self, url: str, fields: dict[str, str]) -> Any:
        """The `result` of one Bot API call whose parameters are form fields (objects as JSON).

        Errors are PTB's (`RetryAfter`, `BadRequest`, ...), as for its typed calls.
        """
        data = RequestData([RequestParameter(name, value, None) for name, value in fields.items()])
        return await self.post(url, data)

    async def download(self, url: str, limit: int) -> bytes:
        """A file's bytes, read in chunks and refused (MediaTooBig) as soon as they pass `limit`.

        PTB's own `download_as_bytearray` reads the whole body first, however long the host
        streams; an error's body is not read at all.
        """
        session = self._session
        if session is None or session.closed:
            raise MediaUnavailable("the Telegram channel is not started")
        timeout = aiohttp.ClientTimeout(sock_connect=self._connect, sock_read=self._read)
        try:
            async with session.get(url, timeout=timeout) as response:
                if response.status != 200:
                    raise MediaUnavailable(f"the download answered HTTP {response.status}")
                declared = response.content_length
                if declared is not None and declared > limit:
                    raise MediaTooBig(f"the download says {declared} bytes", limit)
                body = bytearray()
                async for chunk in response.content.iter_chunked(_CHUNK):
                    body += chunk
                    if len(body) > limit:
                        raise MediaTooBig(f"more than {limit} bytes downloaded", limit)
                return bytes(body)
        except TimeoutError as exc:
            raise MediaUnavailable("the download stalled") from exc
        except aiohttp.ClientError as exc:
            raise MediaUnavailable(f"the download failed: {type(exc).__name__}") from exc
