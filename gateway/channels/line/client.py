"""The LINE Messaging API through line-bot-sdk's async client, with errors translated here.

Reply, push, the loading animation and message content (on the data host, LINE's
api-data) are used. A 429 is retried a few times with backoff, except the monthly push
limit, which no retry can fix.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, NamedTuple, TypeVar
from urllib.parse import quote

import aiohttp
from linebot.v3.messaging import (
    ApiException,
    AsyncApiClient,
    AsyncMessagingApi,
    AudioMessage,
    Configuration,
    ImageMessage,
    Message,
    PostbackAction,
    PushMessageRequest,
    QuickReply,
    QuickReplyItem,
    ReplyMessageRequest,
    ShowLoadingAnimationRequest,
    TextMessage,
)

from gateway.channels.api import Button, ChannelError, MediaTooBig, MediaUnavailable, RateLimited

log = logging.getLogger(__name__)

T = TypeVar("T")

MAX_MESSAGES_PER_CALL = 5
MAX_POSTBACK_DATA = 300
MAX_QUICK_REPLY_ITEMS = 13
MONTHLY_LIMIT = "monthly limit"
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


def text_messages(texts: Sequence[str], buttons: Sequence[Button] = ()) -> list[TextMessage]:
    """Text messages; the buttons become postback quick replies on the last one."""
    quick = quick_reply(buttons)
    last = len(texts) - 1
    return [
        TextMessage(text=t, quick_reply=quick if i == last else None) for i, t in enumerate(texts)
    ]


def audio_message(url: str, seconds: float, buttons: Sequence[Button] = ()) -> AudioMessage:
    """An audio message LINE fetches from `url` (https), lasting `seconds` (sent in ms), the
    buttons as its quick replies."""
    return AudioMessage(
        original_content_url=url,
        duration=max(1, round(seconds * 1000)),
        quick_reply=quick_reply(buttons),
    )


def image_message(url: str) -> ImageMessage:
    """An image message LINE fetches from `url` (https), its preview from the same link."""
    return ImageMessage(original_content_url=url, preview_image_url=url)


def quick_reply(buttons: Sequence[Button]) -> QuickReply | None:
    """The buttons as postback quick replies (None without any)."""
    items = []
    for b in buttons:
        data = f"{b.action}:{b.value}"
        if len(data) > MAX_POSTBACK_DATA:
            log.warning(
                "button %r dropped: postback data over %d chars", b.label, MAX_POSTBACK_DATA
            )
            continue
        action = PostbackAction(label=b.label[:20], data=data, display_text=b.label)
        items.append(QuickReplyItem(action=action))
    return QuickReply(items=items[:MAX_QUICK_REPLY_ITEMS]) if items else None


class LineClient:
    """Reply, push and loading calls; ApiException never leaves this class."""

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
        self._config = Configuration(access_token=access_token, host=host)
        # Content lives on its own host (api-data); `host` would send it to the API's.
        self._data_config = Configuration(access_token=access_token, host=data_host or host)
        self._data_client: AsyncApiClient | None = None
        self.timeout = timeout
        self.rate_limit_retries = rate_limit_retries
        self.backoff = backoff
        self._client: AsyncApiClient | None = None
        self._api: AsyncMessagingApi | None = None

    async def open(self) -> None:
        """Create the HTTP session now (it must be made inside the running loop)."""
        _ = self.api

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = self._api = None
        if self._data_client is not None:
            await self._data_client.close()
            self._data_client = None

    async def content(self, message_id: str, limit: int) -> bytes:
        """What a user sent in a message (image, audio, file), read up to `limit` bytes.

        The SDK's `get_message_content` reads the whole body before anyone can look at its
        size, so the same endpoint is streamed through the SDK's own HTTP client here, and
        of an error's body only its first `ERROR_BYTES`.
        """
        if self._data_client is None:
            self._data_client = AsyncApiClient(self._data_config)
        host = self._data_config.host
        url = f"{host}/v2/bot/message/{quote(message_id, safe='')}/content"
        headers = {"Authorization": f"Bearer {self._data_config.access_token}"}
        try:
            response = await self._data_client.rest_client.request(
                "GET", url, headers=headers, _preload_content=False
            )  # the conversation layer bounds the time it may take
            async with response:
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

    @property
    def api(self) -> AsyncMessagingApi:
        """The SDK's API; its HTTP session is made on first use, always inside the loop."""
        if self._api is None:
            self._client = AsyncApiClient(self._config)
            self._api = AsyncMessagingApi(self._client)
        return self._api

    async def reply(self, token: str, messages: Sequence[Message]) -> list[str]:
        """Answer with a reply token (free of quota); returns the sent message ids."""
        request = ReplyMessageRequest(reply_token=token, messages=list(messages))
        response = await self._call(
            "reply", lambda: self.api.reply_message(request, _request_timeout=self.timeout)
        )
        return [m.id for m in response.sent_messages]

    async def push(self, to: str, messages: Sequence[Message], retry_key: str) -> list[str]:
        """Push with a retry key; a 409 means LINE already accepted this key, which is success."""
        request = PushMessageRequest(to=to, messages=list(messages))
        try:
            response = await self._call(
                "push",
                lambda: self.api.push_message(
                    request, x_line_retry_key=retry_key, _request_timeout=self.timeout
                ),
            )
        except _AlreadyAccepted as accepted:
            log.info("LINE push %s was already accepted (request %s)", retry_key, accepted)
            return []
        return [m.id for m in response.sent_messages]

    async def profile(self, user_id: str) -> Profile:
        """The user's LINE profile: display name and language, where LINE tells them."""
        got = await self._call(
            "profile", lambda: self.api.get_profile(user_id, _request_timeout=10), retries=0
        )
        name, language = getattr(got, "display_name", None), getattr(got, "language", None)
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
        request = ShowLoadingAnimationRequest(chat_id=user_id, loading_seconds=seconds)
        # Cosmetic: never worth waiting for, so no rate-limit retries.
        await self._call(
            "loading",
            lambda: self.api.show_loading_animation(request, _request_timeout=10),
            retries=0,
        )

    async def _call(
        self, op: str, fn: Callable[[], Awaitable[T]], *, retries: int | None = None
    ) -> T:
        limit = self.rate_limit_retries if retries is None else retries
        attempt = 0
        while True:
            attempt += 1
            try:
                return await fn()
            except ApiException as exc:
                error = _translate(op, exc)
                if not isinstance(error, RateLimited) or attempt > limit:
                    raise error from exc
            except (aiohttp.ClientError, TimeoutError) as exc:
                raise ChannelError(f"LINE {op} failed: {type(exc).__name__}: {exc}") from exc
            delay = max(error.retry_after, self.backoff(attempt))
            log.warning("LINE %s rate limited, retry %d in %.1fs", op, attempt, delay)
            await asyncio.sleep(delay)


class _AlreadyAccepted(ChannelError):
    """409 on push: the retry key was accepted earlier."""


def _translate(op: str, exc: ApiException) -> ChannelError:
    status = int(exc.status or 0)
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
