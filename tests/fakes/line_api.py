"""Recording fake of the LINE Messaging API plus LINE webhook body builders.

The fake is an aiohttp server on 127.0.0.1 that the real line-bot-sdk talks to
when configured with ``Configuration(access_token=..., host=fake.base_url)``.
Every request is processed as soon as it arrives (state changes, deliveries and
the recorded ``Call`` happen immediately); ``set_delay`` only delays the HTTP
response, which mimics "LINE accepted the message but the client timed out".

What users sent is served on a second host, as LINE serves it on api-data:
``add_content(message_id, data)`` registers it and ``data_url`` is that host's root
(``GET /v2/bot/message/{messageId}/content``).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import json
import os
import re
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

__all__ = [
    "BOT_USER_ID",
    "USER_ID",
    "Call",
    "FakeLineAPI",
    "follow_event",
    "new_event_id",
    "postback_event",
    "sign",
    "text_event",
    "unknown_event",
    "utf16_len",
    "webhook_body",
]

BOT_USER_ID = "U" + "f" * 32
USER_ID = "U" + "1" * 32
BOT_MENTION_NAME = "FakeBot"

REPLY_PATH = "/v2/bot/message/reply"
PUSH_PATH = "/v2/bot/message/push"
LOADING_PATH = "/v2/bot/chat/loading/start"
BOT_INFO_PATH = "/v2/bot/info"
WEBHOOK_ENDPOINT_PATH = "/v2/bot/channel/webhook/endpoint"
WEBHOOK_TEST_PATH = "/v2/bot/channel/webhook/test"
QUOTA_PATH = "/v2/bot/message/quota"
QUOTA_CONSUMPTION_PATH = "/v2/bot/message/quota/consumption"
PROFILE_PREFIX = "/v2/bot/profile/"

AUTH_FAILED = (
    "Authentication failed. Confirm that the access token in the authorization header is valid."
)
INVALID_REPLY_TOKEN = "Invalid reply token"
RETRY_KEY_ACCEPTED = "The retry key is already accepted"
MONTHLY_LIMIT = "You have reached your monthly limit."

MAX_TEXT_UTF16 = 5000
MAX_MESSAGES = 5
MAX_QUICK_REPLY_ITEMS = 13
MAX_POSTBACK_DATA = 300
MESSAGE_TYPES = frozenset(
    {
        "text",
        "textV2",
        "sticker",
        "image",
        "video",
        "audio",
        "location",
        "imagemap",
        "template",
        "flex",
    }
)
_USER_ID_RE = re.compile(r"^U[0-9a-f]{32}$")

_Handler = Callable[["web.Request", Any], Awaitable["_Response"]]


@dataclass
class Call:
    """One request received by the fake, with the status it was answered with."""

    path: str
    method: str
    body: Any
    headers: dict[str, str]
    at: float
    status: int = 0


@dataclass
class _Failure:
    status: int
    message: str
    times: int
    headers: dict[str, str]


@dataclass
class _ReplyToken:
    expires_at: float
    to: str | None
    used: bool = False


@dataclass
class _Delivery:
    path: str
    to: str | None
    message: dict[str, Any]


@dataclass
class _Response:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


def utf16_len(text: str) -> int:
    """Length of text in UTF-16 code units, the way LINE counts characters."""
    return len(text.encode("utf-16-le")) // 2


def _error(status: int, message: str, details: list[dict[str, str]] | None = None) -> _Response:
    body: dict[str, Any] = {"message": message}
    if details:
        body["details"] = details
    return _Response(status, body)


def _body_error(details: list[dict[str, str]]) -> _Response:
    return _error(400, f"The request body has {len(details)} error(s)", details)


def _walk_postbacks(node: Any, prop: str, out: list[dict[str, str]]) -> None:
    if isinstance(node, dict):
        data = node.get("data")
        too_long = isinstance(data, str) and len(data) > MAX_POSTBACK_DATA
        if node.get("type") == "postback" and too_long:
            out.append(
                {
                    "message": f"Length must be between 0 and {MAX_POSTBACK_DATA}",
                    "property": f"{prop}.data",
                }
            )
        for key, value in node.items():
            _walk_postbacks(value, f"{prop}.{key}", out)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            _walk_postbacks(value, f"{prop}[{i}]", out)


def _validate_messages(messages: Any) -> list[dict[str, str]]:
    if not isinstance(messages, list) or not 1 <= len(messages) <= MAX_MESSAGES:
        return [{"message": f"Size must be between 1 and {MAX_MESSAGES}", "property": "messages"}]
    details: list[dict[str, str]] = []
    for i, msg in enumerate(messages):
        prop = f"messages[{i}]"
        if not isinstance(msg, dict) or not msg.get("type"):
            details.append({"message": "must be specified", "property": f"{prop}.type"})
            continue
        if msg["type"] not in MESSAGE_TYPES:
            details.append({"message": "Invalid message type", "property": f"{prop}.type"})
        if msg["type"] in ("text", "textV2"):
            text = msg.get("text")
            if not isinstance(text, str) or not text:
                details.append({"message": "must be specified", "property": f"{prop}.text"})
            elif utf16_len(text) > MAX_TEXT_UTF16:
                details.append(
                    {
                        "message": f"Length must be between 0 and {MAX_TEXT_UTF16}",
                        "property": f"{prop}.text",
                    }
                )
        if msg["type"] in ("audio", "image", "video"):
            _check_media(msg, prop, details)
        quick_reply = msg.get("quickReply")
        if isinstance(quick_reply, dict):
            items = quick_reply.get("items")
            if isinstance(items, list) and len(items) > MAX_QUICK_REPLY_ITEMS:
                details.append(
                    {
                        "message": f"Size must be between 0 and {MAX_QUICK_REPLY_ITEMS}",
                        "property": f"{prop}.quickReply.items",
                    }
                )
        _walk_postbacks(msg, prop, details)
    return details


MAX_MEDIA_URL = 2000
"""The longest originalContentUrl / previewImageUrl LINE takes."""


def _check_media(msg: dict[str, Any], prop: str, details: list[dict[str, str]]) -> None:
    """An audio, image or video message: its URLs https and at most 2000 characters; an
    audio message's duration in milliseconds."""
    urls = ["originalContentUrl"]
    if msg["type"] in ("image", "video"):
        urls.append("previewImageUrl")
    for key in urls:
        url = msg.get(key)
        if not isinstance(url, str) or not url:
            details.append({"message": "must be specified", "property": f"{prop}.{key}"})
        elif not url.startswith("https://"):
            details.append({"message": "must be a HTTPS URL", "property": f"{prop}.{key}"})
        elif len(url) > MAX_MEDIA_URL:
            details.append(
                {
                    "message": f"Length must be between 0 and {MAX_MEDIA_URL}",
                    "property": f"{prop}.{key}",
                }
            )
    if msg["type"] == "audio":
        duration = msg.get("duration")
        if not isinstance(duration, int) or isinstance(duration, bool) or duration < 1:
            details.append({"message": "must be specified", "property": f"{prop}.duration"})


def _sent_messages(messages: list[dict[str, Any]]) -> dict[str, Any]:
    sent = [{"id": _message_id(), "quoteToken": _random_token(64)} for _ in messages]
    return {"sentMessages": sent}


def _random_token(length: int = 32) -> str:
    return base64.urlsafe_b64encode(os.urandom(length)).decode()[:length]


class FakeLineAPI:
    """In-process fake of the LINE Messaging API that records every request."""

    def __init__(
        self, access_token: str = "test-line-access-token", bot_user_id: str = BOT_USER_ID
    ) -> None:
        """Create a stopped fake; call start() or use ``async with``."""
        self.access_token = access_token
        self.bot_user_id = bot_user_id
        self.calls: list[Call] = []
        self.unknown_calls: list[Call] = []
        self.quota_exhausted = False
        self.quota_limit = 200
        self.webhook_endpoint = ""
        self.webhook_active = False
        # What LINE's webhook test reports about our server (0: no response at all).
        self.webhook_test_status = 200
        self.webhook_test_reason = "OK"
        self.profiles: dict[str, dict[str, Any]] = {}
        self._runner: web.AppRunner | None = None
        self._base_url: str | None = None
        self._cond = asyncio.Condition()
        self._closing = asyncio.Event()
        self._reply_tokens: dict[str, _ReplyToken] = {}
        self._failures: dict[str, list[_Failure]] = {}
        self._delays: dict[str, float] = {}
        self._accepted_retry_keys: dict[str, str] = {}
        self._deliveries: list[_Delivery] = []
        self._pushes_accepted = 0
        # Message content on the data host: message id -> (bytes, content type).
        self.contents: dict[str, tuple[bytes, str]] = {}
        self.content_requests: list[str] = []
        self.endless_errors: dict[str, int] = {}
        """message id -> bytes streamed of a 500 whose body never ends (`fail_content`)."""
        self._data_runner: web.AppRunner | None = None
        self._data_url: str | None = None
        self._routes: dict[tuple[str, str], _Handler] = {
            ("POST", REPLY_PATH): self._reply,
            ("POST", PUSH_PATH): self._push,
            ("POST", LOADING_PATH): self._loading,
            ("GET", BOT_INFO_PATH): self._bot_info,
            ("GET", WEBHOOK_ENDPOINT_PATH): self._get_webhook,
            ("PUT", WEBHOOK_ENDPOINT_PATH): self._put_webhook,
            ("POST", WEBHOOK_TEST_PATH): self._test_webhook,
            ("GET", QUOTA_PATH): self._quota,
            ("GET", QUOTA_CONSUMPTION_PATH): self._quota_consumption,
        }

    # lifecycle -------------------------------------------------------------

    async def start(self) -> None:
        """Start serving on a random free port of 127.0.0.1."""
        if self._runner is not None:
            return
        self._cond = asyncio.Condition()
        self._closing = asyncio.Event()
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self._runner = runner
        host, port = runner.addresses[0][:2]
        self._base_url = f"http://{host}:{port}"
        data = web.Application()
        data.router.add_get("/v2/bot/message/{message_id}/content", self._content)
        data_runner = web.AppRunner(data, handle_signals=False, access_log=None)
        await data_runner.setup()
        await web.TCPSite(data_runner, "127.0.0.1", 0).start()
        self._data_runner = data_runner
        host, port = data_runner.addresses[0][:2]
        self._data_url = f"http://{host}:{port}"

    async def close(self) -> None:
        """Stop the server, cutting short any delayed responses."""
        self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._data_runner is not None:
            await self._data_runner.cleanup()
            self._data_runner = None

    async def __aenter__(self) -> FakeLineAPI:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    @property
    def base_url(self) -> str:
        """Root URL of the running fake, e.g. http://127.0.0.1:PORT (no path)."""
        if self._base_url is None:
            raise RuntimeError("FakeLineAPI is not started")
        return self._base_url

    @property
    def data_url(self) -> str:
        """Root URL of the data host (LINE's api-data), where message content is served."""
        if self._data_url is None:
            raise RuntimeError("FakeLineAPI is not started")
        return self._data_url

    # test controls ---------------------------------------------------------

    def add_content(
        self, message_id: str, data: bytes, content_type: str = "application/octet-stream"
    ) -> None:
        """What a user sent in message `message_id`, as the data host serves it."""
        self.contents[message_id] = (data, content_type)

    def fail_content(self, message_id: str) -> None:
        """Content `message_id` answers 500 with an error body that streams without end."""
        self.endless_errors[message_id] = 0

    async def _content(self, request: web.Request) -> web.StreamResponse:
        message_id = request.match_info["message_id"]
        self.content_requests.append(message_id)
        if request.headers.get("Authorization") != f"Bearer {self.access_token}":
            return web.json_response({"message": AUTH_FAILED}, status=401)
        if message_id in self.endless_errors:
            response = web.StreamResponse(status=500)
            await response.prepare(request)
            try:
                await response.write(b'{"message": "Internal error ' + b"x" * 65536)
                while self.endless_errors[message_id] < 1 << 30:  # the fake's own bound
                    await response.write(b"x" * 65536)
                    self.endless_errors[message_id] += 65536
            except (ConnectionError, RuntimeError):
                pass  # the reader hung up
            return response
        if message_id not in self.contents:
            return web.json_response({"message": "Not found"}, status=404)
        data, content_type = self.contents[message_id]
        return web.Response(body=data, content_type=content_type)

    def calls_to(self, path: str) -> list[Call]:
        """Recorded calls whose path (without query string) equals path."""
        return [c for c in self.calls if c.path == path]

    def issue_reply_token(self, ttl: float = 60.0, *, to: str | None = None) -> str:
        """Issue a reply token accepted once within ttl seconds; to is the chat it belongs to."""
        token = uuid.uuid4().hex
        self._reply_tokens[token] = _ReplyToken(time.monotonic() + ttl, to)
        return token

    def expire_reply_tokens(self) -> None:
        """Make every reply token issued so far invalid."""
        for entry in self._reply_tokens.values():
            entry.expires_at = float("-inf")

    def fail_next(
        self,
        path: str,
        status: int,
        message: str,
        *,
        times: int = 1,
        headers: dict[str, str] | None = None,
    ) -> None:
        """Answer the next `times` authenticated calls to path with status and that message."""
        self._failures.setdefault(path, []).append(
            _Failure(status, message, times, dict(headers or {}))
        )

    def set_delay(self, path: str, seconds: float) -> None:
        """Delay responses to path by seconds (the request itself is processed on arrival)."""
        if seconds > 0:
            self._delays[path] = seconds
        else:
            self._delays.pop(path, None)

    async def wait_for(self, path: str, count: int = 1, timeout: float = 5.0) -> list[Call]:
        """Wait until at least count calls to path were processed and return all of them."""
        async with self._cond:
            try:
                await asyncio.wait_for(
                    self._cond.wait_for(lambda: len(self.calls_to(path)) >= count), timeout
                )
            except TimeoutError:
                seen = [f"{c.method} {c.path} -> {c.status}" for c in self.calls]
                raise AssertionError(
                    f"expected {count} call(s) to {path} within {timeout}s, "
                    f"got {len(self.calls_to(path))}; recorded calls: {seen}"
                ) from None
            return self.calls_to(path)

    def delivered_messages(self, to: str | None = None) -> list[dict[str, Any]]:
        """Message objects accepted by reply or push (2xx only), in order, optionally per chat."""
        return [d.message for d in self._deliveries if to is None or d.to == to]

    def delivered_texts(self, to: str | None = None) -> list[str]:
        """Texts of accepted text messages, in order; for replies `to` is the reply token's chat."""
        return [
            m["text"]
            for m in self.delivered_messages(to)
            if m.get("type") in ("text", "textV2") and isinstance(m.get("text"), str)
        ]

    # request handling ------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        body: Any = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body = raw.decode("utf-8", "replace")
        path = request.path
        call = Call(
            path=path,
            method=request.method,
            body=body,
            headers={str(k): v for k, v in request.headers.items()},
            at=time.monotonic(),
        )
        response = await self._dispatch(request, call)
        response.headers.setdefault("x-line-request-id", str(uuid.uuid4()))
        call.status = response.status
        async with self._cond:
            self.calls.append(call)
            self._cond.notify_all()
        delay = self._delays.get(path)
        if delay:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), delay)
        return web.json_response(response.body, status=response.status, headers=response.headers)

    async def _dispatch(self, request: web.Request, call: Call) -> _Response:
        handler = self._routes.get((request.method, call.path))
        if handler is None and request.method == "GET" and call.path.startswith(PROFILE_PREFIX):
            handler = self._profile
        if handler is None:
            self.unknown_calls.append(call)
            return _error(404, "Not found")
        if request.headers.get("Authorization") != f"Bearer {self.access_token}":
            return _error(401, AUTH_FAILED)
        pending = self._failures.get(call.path)
        if pending:
            failure = pending[0]
            failure.times -= 1
            if failure.times <= 0:
                pending.pop(0)
            return _Response(failure.status, {"message": failure.message}, dict(failure.headers))
        return await handler(request, call.body)

    async def _reply(self, request: web.Request, body: Any) -> _Response:
        if "X-Line-Retry-Key" in request.headers:
            return _error(400, "The retry key is not supported by this API (X-Line-Retry-Key)")
        if not isinstance(body, dict):
            return _error(400, "The request body is not valid JSON")
        details = _validate_messages(body.get("messages"))
        if not isinstance(body.get("replyToken"), str) or not body["replyToken"]:
            details.insert(0, {"message": "must be specified", "property": "replyToken"})
        if details:
            return _body_error(details)
        entry = self._reply_tokens.get(body["replyToken"])
        if entry is None or entry.used or time.monotonic() > entry.expires_at:
            return _error(400, INVALID_REPLY_TOKEN)
        entry.used = True
        for message in body["messages"]:
            self._deliveries.append(_Delivery(REPLY_PATH, entry.to, message))
        return _Response(200, _sent_messages(body["messages"]))

    async def _push(self, request: web.Request, body: Any) -> _Response:
        retry_key = request.headers.get("X-Line-Retry-Key")
        if retry_key is not None:
            try:
                uuid.UUID(retry_key)
            except ValueError:
                return _error(400, "The value for the 'X-Line-Retry-Key' header is invalid")
            accepted_id = self._accepted_retry_keys.get(retry_key)
            if accepted_id is not None:
                return _Response(
                    409,
                    {"message": RETRY_KEY_ACCEPTED},
                    {"x-line-accepted-request-id": accepted_id},
                )
        if not isinstance(body, dict):
            return _error(400, "The request body is not valid JSON")
        details = _validate_messages(body.get("messages"))
        if not isinstance(body.get("to"), str) or not body["to"]:
            details.insert(0, {"message": "must be specified", "property": "to"})
        if details:
            return _body_error(details)
        if self.quota_exhausted:
            return _error(429, MONTHLY_LIMIT)
        request_id = str(uuid.uuid4())
        if retry_key is not None:
            self._accepted_retry_keys[retry_key] = request_id
        self._pushes_accepted += 1
        for message in body["messages"]:
            self._deliveries.append(_Delivery(PUSH_PATH, body["to"], message))
        return _Response(200, _sent_messages(body["messages"]), {"x-line-request-id": request_id})

    async def _loading(self, request: web.Request, body: Any) -> _Response:
        if not isinstance(body, dict):
            return _error(400, "The request body is not valid JSON")
        details: list[dict[str, str]] = []
        chat_id = body.get("chatId")
        if not isinstance(chat_id, str) or not chat_id.startswith("U"):
            details.append({"message": "Invalid chat ID", "property": "chatId"})
        seconds = body.get("loadingSeconds", 20)
        if (
            not isinstance(seconds, int)
            or isinstance(seconds, bool)
            or not 5 <= seconds <= 60
            or seconds % 5
        ):
            details.append(
                {
                    "message": "must be a multiple of 5 between 5 and 60",
                    "property": "loadingSeconds",
                }
            )
        if details:
            return _body_error(details)
        return _Response(202, {})

    async def _bot_info(self, request: web.Request, body: Any) -> _Response:
        info = {
            "userId": self.bot_user_id,
            "basicId": "@000fakebot",
            "displayName": BOT_MENTION_NAME,
            "chatMode": "bot",
            "markAsReadMode": "auto",
        }
        return _Response(200, info)

    async def _get_webhook(self, request: web.Request, body: Any) -> _Response:
        return _Response(200, {"endpoint": self.webhook_endpoint, "active": self.webhook_active})

    async def _put_webhook(self, request: web.Request, body: Any) -> _Response:
        endpoint = body.get("endpoint") if isinstance(body, dict) else None
        if (
            not isinstance(endpoint, str)
            or not endpoint.startswith("https://")
            or len(endpoint) > 500
        ):
            return _error(400, "Invalid webhook endpoint URL")
        self.webhook_endpoint = endpoint
        return _Response(200, {})

    async def _test_webhook(self, request: web.Request, body: Any) -> _Response:
        status = self.webhook_test_status
        result = {
            "success": status == 200,
            "timestamp": datetime.now(UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "statusCode": status,
            "reason": self.webhook_test_reason,
            "detail": str(status),
        }
        return _Response(200, result)

    async def _quota(self, request: web.Request, body: Any) -> _Response:
        return _Response(200, {"type": "limited", "value": self.quota_limit})

    async def _quota_consumption(self, request: web.Request, body: Any) -> _Response:
        return _Response(200, {"totalUsage": self._pushes_accepted})

    async def _profile(self, request: web.Request, body: Any) -> _Response:
        user_id = request.path[len(PROFILE_PREFIX) :]
        if user_id in self.profiles:
            return _Response(200, {"userId": user_id, **self.profiles[user_id]})
        if not _USER_ID_RE.match(user_id):
            return _error(404, "Not found")
        return _Response(
            200, {"userId": user_id, "displayName": f"User {user_id[1:7]}", "language": "en"}
        )


# webhook body builders -----------------------------------------------------

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def new_event_id(timestamp_ms: int | None = None) -> str:
    """A fresh ULID-format webhook event id (26 Crockford base32 characters)."""
    ms = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
    value = (ms << 80) | int.from_bytes(os.urandom(10), "big")
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def _source(user_id: str | None, group_id: str | None, room_id: str | None) -> dict[str, Any]:
    if group_id is not None:
        source: dict[str, Any] = {"type": "group", "groupId": group_id}
    elif room_id is not None:
        source = {"type": "room", "roomId": room_id}
    else:
        return {"type": "user", "userId": user_id}
    if user_id is not None:
        source["userId"] = user_id
    return source


def _common(
    event_type: str,
    *,
    source: dict[str, Any] | None,
    event_id: str | None,
    redelivery: bool,
    timestamp_ms: int | None,
    mode: str,
) -> dict[str, Any]:
    ts = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
    event: dict[str, Any] = {
        "type": event_type,
        "mode": mode,
        "timestamp": ts,
        "webhookEventId": event_id or new_event_id(ts),
        "deliveryContext": {"isRedelivery": redelivery},
    }
    if source is not None:
        event["source"] = source
    return event


def _message_id() -> str:
    return str(int.from_bytes(os.urandom(8), "big") % 10**18).zfill(18)


def text_event(
    text: str,
    *,
    user_id: str = USER_ID,
    group_id: str | None = None,
    room_id: str | None = None,
    reply_token: str | None = None,
    event_id: str | None = None,
    redelivery: bool = False,
    mention_self: bool = False,
    timestamp_ms: int | None = None,
    mode: str = "active",
    quote_token: str | None = None,
) -> dict[str, Any]:
    """A text message event; mention_self tags the leading "@name" (else "@FakeBot ") as the bot."""
    message: dict[str, Any] = {
        "type": "text",
        "id": _message_id(),
        "quoteToken": quote_token or _random_token(64),
        "text": text,
    }
    if mention_self:
        if not text.startswith("@"):
            text = f"@{BOT_MENTION_NAME} {text}"
            message["text"] = text
        mention = text.split(maxsplit=1)[0]
        message["mention"] = {
            "mentionees": [
                {"index": 0, "length": utf16_len(mention), "type": "user", "isSelf": True}
            ]
        }
    event = _common(
        "message",
        source=_source(user_id, group_id, room_id),
        event_id=event_id,
        redelivery=redelivery,
        timestamp_ms=timestamp_ms,
        mode=mode,
    )
    event["replyToken"] = reply_token or uuid.uuid4().hex
    event["message"] = message
    return event


def postback_event(
    data: str,
    *,
    user_id: str = USER_ID,
    group_id: str | None = None,
    room_id: str | None = None,
    reply_token: str | None = None,
    event_id: str | None = None,
    redelivery: bool = False,
    timestamp_ms: int | None = None,
    mode: str = "active",
    params: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A postback event carrying data (and optional params such as a datetime picker's)."""
    event = _common(
        "postback",
        source=_source(user_id, group_id, room_id),
        event_id=event_id,
        redelivery=redelivery,
        timestamp_ms=timestamp_ms,
        mode=mode,
    )
    event["replyToken"] = reply_token or uuid.uuid4().hex
    event["postback"] = {"data": data}
    if params is not None:
        event["postback"]["params"] = params
    return event


def follow_event(
    *,
    user_id: str = USER_ID,
    reply_token: str | None = None,
    event_id: str | None = None,
    redelivery: bool = False,
    timestamp_ms: int | None = None,
    mode: str = "active",
    unblocked: bool = False,
) -> dict[str, Any]:
    """A follow (friend added, or unblocked when unblocked=True) event from a user."""
    event = _common(
        "follow",
        source=_source(user_id, None, None),
        event_id=event_id,
        redelivery=redelivery,
        timestamp_ms=timestamp_ms,
        mode=mode,
    )
    event["replyToken"] = reply_token or uuid.uuid4().hex
    event["follow"] = {"isUnblocked": unblocked}
    return event


def unknown_event(
    event_type: str = "futureEvent",
    *,
    user_id: str = USER_ID,
    group_id: str | None = None,
    room_id: str | None = None,
    event_id: str | None = None,
    redelivery: bool = False,
    timestamp_ms: int | None = None,
    mode: str = "active",
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An event of a type the SDK does not know, with all common event fields."""
    event = _common(
        event_type,
        source=_source(user_id, group_id, room_id),
        event_id=event_id,
        redelivery=redelivery,
        timestamp_ms=timestamp_ms,
        mode=mode,
    )
    if extra:
        event.update(extra)
    return event


def webhook_body(*events: dict[str, Any], destination: str = BOT_USER_ID) -> bytes:
    """Compact UTF-8 JSON webhook request body holding events."""
    payload = {"destination": destination, "events": list(events)}
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def sign(channel_secret: str, body: bytes) -> str:
    """X-Line-Signature value for body: base64 of HMAC-SHA256 keyed with the channel secret."""
    digest = hmac.new(channel_secret.encode("utf-8"), body, hashlib.sha256).digest()
    return base64.b64encode(digest).decode("ascii")
