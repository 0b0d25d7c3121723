"""The LINE Messaging API as JSON over one aiohttp session, with errors translated here.

Reply, push, the loading animation, profiles, the monthly push quota (what scheduled tasks
count against) and message content (on the data host, LINE's api-data) are used. Every
answer makes one of these calls, so they are the API's own JSON on aiohttp, which
line-bot-sdk's async client also uses underneath: the SDK's generated package (its
pydantic models, 29 MB resident and most of a second to import) is loaded only for the
Flex cards an admin is sent (`cards`) and the operator's commands. A 429 is
retried a few times with backoff, except the monthly push limit, which no retry can fix.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, NamedTuple, TypeVar
from urllib.parse import quote

import aiohttp

from gateway.channels.api import (
    Button,
    ChannelError,
    MediaTooBig,
    MediaUnavailable,
    PushQuota,
    RateLimited,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

LineMessage = dict[str, Any]
"""One message object of the Messaging API, as its JSON (`{"type": "text", ...}`)."""

MAX_MESSAGES_PER_CALL = 5
MAX_POSTBACK_DATA = 300
MAX_QUICK_REPLY_ITEMS = 13
MONTHLY_LIMIT = "monthly limit"
QUOTA_PATH = "/v2/bot/message/quota"
ERROR_BYTES = 4096
"""How much of an error body is read for its reason."""


class Profile(NamedTuple):
    """What a LINE profile tells about a user."""

    display_name: str | None
    language: str | None
    """A BCP 47 tag ("ja", "zh-TW", "th"); absent when the user has not shared it."""


class ReplyTokenRejected(ChannelError):
    """The reply token was invalid, used or expired (400): push instead."""


class PushQuotaExhausted(ChannelError):
    """The LINE Official Account has used up this month's push messages."""


class ApiError(Exception):
    """An error status from the Messaging API, with its body and headers."""

    def __init__(self, status: int, body: str, headers: Mapping[str, str]) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.body = body
        self.headers = headers


def text_messages(texts: Sequence[str], buttons: Sequence[Button] = ()) -> list[LineMessage]:
    """Text messages; the buttons become postback quick replies on the last one."""
    quick = quick_reply(buttons)
    last = len(texts) - 1
    return [
        _with_quick({"type": "text", "text": t}, quick if i == last else None)
        for i, t in enumerate(texts)
    ]


def audio_message(url: str, seconds: float, buttons: Sequence[Button] = ()) -> LineMessage:
    """An audio message LINE fetches from `url` (https), lasting `seconds` (sent in ms), the
    buttons as its quick replies."""
    message = {
        "type": "audio",
        "originalContentUrl": url,
        "duration": max(1, round(seconds * 1000)),
    }
    return _with_quick(message, quick_reply(buttons))


def image_message(url: str) -> LineMessage:
    """An image message LINE fetches from `url` (https), its preview from the same link."""
    return {"type": "image", "originalContentUrl": url, "previewImageUrl": url}


def postback(label: str, data: str, display_text: str) -> dict[str, str]:
    """A postback action (what a button sends back when tapped)."""
    return {"type": "postback", "label": label, "data": data, "displayText": display_text}


def quick_reply(buttons: Sequence[Button]) -> dict[str, Any] | None:
    """The buttons as postback quick replies (None without any)."""
    items = []
    for b in buttons:
        data = f"{b.action}:{b.value}"
        if len(data) > MAX_POSTBACK_DATA:
            log.warning(
                "button %r dropped: postback data over %d chars", b.label, MAX_POSTBACK_DATA
            )
            continue
        items.append({"type": "action", "action": postback(b.label[:20], data, b.label)})
    return {"items": items[:MAX_QUICK_REPLY_ITEMS]} if items else None


def _with_quick(message: LineMessage, quick: dict[str, Any] | None) -> LineMessage:
    if quick is not None:
        message["quickReply"] = quick
    return message


class LineClient:
    """Reply, push, loading, profile and content calls; `ApiError` never leaves this class."""

    def __init__(
        self,
        access_token: str,
        host: str,
        *,
        data_host: str | None = None,
        timeout: float = 20.0,
        rate_limit_retries: int = 3,
        backoff: Callable[[int], float] = lambda attempt: min(8.0, 2.0 ** (attempt - 1)),
    ) -> None:
        self._host = host.rstrip("/")
        # Content lives on its own host (api-data); `host` would send it to the API's.
        self._data_host = (data_host or host).rstrip("/")
        self._headers = {"Authorization": f"Bearer {access_token}"}
        self.timeout = timeout
        self.rate_limit_retries = rate_limit_retries
        self.backoff = backoff
        self._session: aiohttp.ClientSession | None = None

    async def open(self) -> None:
        """Create the HTTP session now (it must be made inside the running loop)."""
        _ = self.session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    @property
    def session(self) -> aiohttp.ClientSession:
        """The HTTP session; made on first use, always inside the loop."""
        if self._session is None:
            self._session = aiohttp.ClientSession(headers=self._headers)
        return self._session

    async def content(self, message_id: str, limit: int) -> bytes:
        """What a user sent in a message (image, audio, file), read up to `limit` bytes: the
        body is streamed, and of an error's body only its first `ERROR_BYTES` are read."""
        url = f"{self._data_host}/v2/bot/message/{quote(message_id, safe='')}/content"
        try:
            # The conversation layer bounds the time it may take.
            async with self.session.get(url, timeout=aiohttp.ClientTimeout()) as response:
                if response.status != 200:
                    # Only the start of an error's body: its reason is short, the rest unread.
                    head = await response.content.read(ERROR_BYTES)
                    text = error_message(head.decode("utf-8", errors="replace"))
                    raise MediaUnavailable(f"LINE content answered {response.status} {text}")
                if response.content_length is not None and response.content_length > limit:
                    raise MediaTooBig(f"LINE says {response.content_length} bytes", limit)
                body = bytearray()
                async for chunk in response.content.iter_chunked(64 * 1024):
                    body += chunk
                    if len(body) > limit:
                        raise MediaTooBig(f"more than {limit} bytes", limit)
                return bytes(body)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise MediaUnavailable(f"LINE content failed: {type(exc).__name__}") from exc

    async def _request(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | None = None,
        *,
        timeout: float,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        """One call; its JSON answer ({} for an empty one), an error status as `ApiError`."""
        data = None if body is None else json.dumps(body, ensure_ascii=False).encode()
        sent = {"Content-Type": "application/json", **(headers or {})} if data else headers
        async with self.session.request(
            method,
            self._host + path,
            data=data,
            headers=sent,
            timeout=aiohttp.ClientTimeout(total=timeout),
        ) as response:
            text = await response.text(errors="replace")
            if response.status >= 400:
                raise ApiError(response.status, text, response.headers)
            return json.loads(text) if text.strip() else {}

    async def reply(self, token: str, messages: Sequence[LineMessage]) -> list[str]:
        """Answer with a reply token (free of quota); returns the sent message ids."""
        body = {"replyToken": token, "messages": list(messages)}
        answer = await self._call(
            "reply",
            lambda: self._request("POST", "/v2/bot/message/reply", body, timeout=self.timeout),
        )
        return sent_ids(answer)

    async def push(self, to: str, messages: Sequence[LineMessage], retry_key: str) -> list[str]:
        """Push with a retry key; a 409 means LINE already accepted this key, which is success."""
        body = {"to": to, "messages": list(messages)}
        try:
            answer = await self._call(
                "push",
                lambda: self._request(
                    "POST",
                    "/v2/bot/message/push",
                    body,
                    timeout=self.timeout,
                    headers={"X-Line-Retry-Key": retry_key},
                ),
            )
        except _AlreadyAccepted as accepted:
            log.info("LINE push %s was already accepted (request %s)", retry_key, accepted)
            return []
        return sent_ids(answer)

    async def profile(self, user_id: str) -> Profile:
        """The user's LINE profile: display name and language, where LINE tells them."""
        path = f"/v2/bot/profile/{quote(user_id, safe='')}"
        got = await self._call("profile", lambda: self._request("GET", path, timeout=10), retries=0)
        got = got if isinstance(got, dict) else {}
        name, language = got.get("displayName"), got.get("language")
        return Profile(str(name) if name else None, str(language) if language else None)

    async def display_name(self, user_id: str) -> str | None:
        """The user's LINE display name, or None when LINE does not tell (best effort)."""
        try:
            return (await self.profile(user_id)).display_name
        except ChannelError as exc:
            log.info("no LINE profile for %s: %s", user_id, exc)
            return None

    async def show_loading(self, user_id: str, seconds: int) -> None:
        """Show the typing animation in a 1:1 chat for up to `seconds` (5-60, a multiple of 5)."""
        body = {"chatId": user_id, "loadingSeconds": seconds}
        # Cosmetic: never worth waiting for, so no rate-limit retries.
        await self._call(
            "loading",
            lambda: self._request("POST", "/v2/bot/chat/loading/start", body, timeout=10),
            retries=0,
        )

    async def push_quota(self) -> PushQuota:
        """This month's push quota: LINE's limit (None: none) and the pushes used so far."""
        limit = await self._call(
            "quota", lambda: self._request("GET", QUOTA_PATH, timeout=10), retries=0
        )
        used = await self._call(
            "quota",
            lambda: self._request("GET", QUOTA_PATH + "/consumption", timeout=10),
            retries=0,
        )
        try:
            value = int(limit["value"]) if limit.get("type") == "limited" else None
            return PushQuota(value, int(used["totalUsage"]))
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise ChannelError(f"LINE quota answered something else: {limit!r}, {used!r}") from exc

    async def _call(
        self, op: str, fn: Callable[[], Awaitable[T]], *, retries: int | None = None
    ) -> T:
        limit = self.rate_limit_retries if retries is None else retries
        attempt = 0
        while True:
            attempt += 1
            try:
                return await fn()
            except ApiError as exc:
                error = _translate(op, exc)
                if not isinstance(error, RateLimited) or attempt > limit:
                    raise error from exc
            except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
                raise ChannelError(f"LINE {op} failed: {type(exc).__name__}: {exc}") from exc
            delay = max(error.retry_after, self.backoff(attempt))
            log.warning("LINE %s rate limited, retry %d in %.1fs", op, attempt, delay)
            await asyncio.sleep(delay)


def sent_ids(answer: Any) -> list[str]:
    """The ids of the messages a reply or push sent (`sentMessages`)."""
    sent = answer.get("sentMessages") if isinstance(answer, dict) else None
    return [str(m["id"]) for m in sent or () if isinstance(m, dict) and "id" in m]


class _AlreadyAccepted(ChannelError):
    """409 on push: the retry key was accepted earlier."""


def _translate(op: str, exc: ApiError) -> ChannelError:
    status = exc.status
    message = error_message(exc.body)
    request_id = (exc.headers or {}).get("x-line-request-id", "-")
    text = f"LINE {op} failed: {status} {message} (request {request_id})"
    if status == 409 and op == "push":
        return _AlreadyAccepted((exc.headers or {}).get("x-line-accepted-request-id", "-"))
    if status == 400 and op == "reply" and "reply token" in message.lower():
        return ReplyTokenRejected(text)
    if status == 429 and MONTHLY_LIMIT in message.lower():
        return PushQuotaExhausted(text)
    if status == 429:
        return RateLimited(text, _retry_after(exc.headers))
    return ChannelError(text)


def error_message(body: Any) -> str:
    """The `message` of a LINE error body, or the body itself (at most 200 characters)."""
    if not body:
        return ""
    try:
        return str(json.loads(body)["message"])
    except (ValueError, KeyError, TypeError):
        return str(body).strip()[:200]


def _retry_after(headers: Any) -> float:
    try:
        return float((headers or {}).get("Retry-After", 0))
    except (TypeError, ValueError):
        return 0.0
