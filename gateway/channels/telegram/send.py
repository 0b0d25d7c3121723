"""Talking to the Bot API: pacing per chat, flood-control retries, the plain-text fallback.

Every call goes through `Sender.call`, which waits out Telegram's 429 (`retry_after`) a
bounded number of times and translates PTB's errors into the gateway's tree, so nothing
above this module catches a `telegram.error` type.

sendMessage, once per part of every answer, is sent as form fields built here and read
back for its message id only (`AiohttpRequest.post_fields`); PTB's typed `send_message`
would build its parameter objects and a whole `Message` (some 200 attributes) per call for
that one number. Every other method goes through PTB's typed calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import TypeVar

from aiolimiter import AsyncLimiter
from telegram import (
    Bot,
    ForceReply,
    InlineKeyboardMarkup,
    InputFile,
    Message,
    ReplyParameters,
)
from telegram.constants import ChatAction, ParseMode
from telegram.error import (
    BadRequest,
    ChatMigrated,
    Forbidden,
    InvalidToken,
    RetryAfter,
    TelegramError,
)
from telegram.warnings import PTBDeprecationWarning

from gateway.channels.api import (
    ChannelError,
    ChatRef,
    ChatUnreachable,
    RateLimited,
    cancel_and_wait,
)
from gateway.channels.telegram.buttons import Keyboard
from gateway.channels.telegram.format import Part
from gateway.channels.telegram.request import AiohttpRequest

log = logging.getLogger(__name__)

MAX_CAPTION = 1000
"""A photo caption's characters at most (Telegram takes 1,024 UTF-16 units: room left
for characters that take two)."""

T = TypeVar("T")
Markup = InlineKeyboardMarkup | ForceReply | Keyboard
# BadRequest descriptions that no retry can fix: the chat or the message is gone.
_GONE = ("chat not found", "message to edit not found", "message can't be edited")


class FormattingRejected(ChannelError):
    """Telegram could not parse the HTML of a message ("can't parse entities")."""


class NotModified(ChannelError):
    """An edit asked for what the message already shows."""


class Undeliverable(ChatUnreachable):
    """The chat cannot be written to (the bot was blocked, removed, or the chat moved)."""


@dataclass(frozen=True)
class Target:
    """Where a message goes: the chat, its forum topic, and whether it is a group."""

    chat_id: int
    thread_id: int | None = None
    is_group: bool = False

    @classmethod
    def of(cls, chat: ChatRef) -> Target:
        thread = int(chat.thread_id) if chat.thread_id else None
        return cls(int(chat.chat_id), thread, chat.is_group)


def bot_request(pool_size: int = 256, timeout: float = 5.0) -> AiohttpRequest:
    """PTB's HTTP client: straight on one aiohttp session (see `request`).

    httpx's own pool checks every pooled connection on each request, and even on an
    aiohttp transport httpx builds its request, response and header objects per call;
    PTB's `BaseRequest` extension point skips both.
    """
    return AiohttpRequest(pool_size=pool_size, timeout=timeout)


def _json(value: object) -> str:
    """A parameter that is an object, as the Bot API reads it inside a form field."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def retry_seconds(exc: RetryAfter) -> float:
    """`retry_after` in seconds, whether PTB gives an int or (PTB_TIMEDELTA=1) a timedelta."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PTBDeprecationWarning)
        value = exc.retry_after
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


@dataclass(frozen=True)
class SendPolicy:
    """How fast and how patiently to send."""

    # Telegram: about one message a second in a chat, 20 a minute in a group, 30 a second
    # overall; a 429 says how long to wait.
    private_interval: float = 1.0
    group_per_minute: float = 20
    # 0 leaves the overall pace to Telegram's 429s, which `call` honours.
    overall_per_second: float = 30
    max_retries: int = 3
    max_retry_wait: float = 600.0
    typing_interval: float = 4.0
    # Telegram advises a chat action only when the answer takes noticeable time; a quick
    # answer arrives before "typing…" would show, and saves one Bot API call.
    typing_delay: float = 1.0
    # An answer being written: a draft at most this often in a private chat (Telegram
    # animates each change), an edit of the one message at most this often in a group
    # (whose 20 messages a minute edits count against too).
    draft_interval: float = 1.0
    draft_keepalive: float = 20.0
    edit_interval: float = 3.0


class Sender:
    """Sends, edits and acknowledges through one PTB bot."""

    def __init__(self, bot: Bot, policy: SendPolicy | None = None) -> None:
        request = bot.request
        if not isinstance(request, AiohttpRequest):
            raise ChannelError("sending needs the gateway's own Bot API client (`bot_request`)")
        self.bot = bot
        self._request = request
        self.policy = policy or SendPolicy()
        rate = self.policy.overall_per_second
        self._overall = AsyncLimiter(rate, 1) if rate else None
        # Per chat; the group bucket lets short bursts through, as Telegram does.
        self._chats: dict[int, AsyncLimiter] = {}
        self.drafts_unsupported = False

    async def call(
        self, what: str, fn: Callable[[], Awaitable[T]], *, retries: int | None = None
    ) -> T:
        """Run one API call, waiting out flood control up to `max_retries` (or `retries`) times."""
        limit = self.policy.max_retries if retries is None else retries
        attempt = 0
        while True:
            try:
                return await fn()
            except RetryAfter as exc:
                wait = retry_seconds(exc)
                if attempt >= limit or wait > self.policy.max_retry_wait:
                    raise RateLimited(f"Telegram flood control on {what}", wait) from exc
                attempt += 1
                log.info("Telegram asked to wait %.0f s before %s (retry %d)", wait, what, attempt)
                await asyncio.sleep(wait)
            except TelegramError as exc:
                raise self.translate(what, exc) from exc

    def translate(self, what: str, exc: TelegramError) -> ChannelError:
        """The gateway's error for a PTB error; the token never survives into the text."""
        text = f"Telegram refused {what}: {exc.message}".replace(self.bot.token, "[redacted]")
        lowered = exc.message.lower()
        if isinstance(exc, BadRequest) and "can't parse entities" in lowered:
            return FormattingRejected(text)
        if isinstance(exc, BadRequest) and "message is not modified" in lowered:
            return NotModified(text)
        if isinstance(exc, Forbidden | ChatMigrated) or (
            isinstance(exc, BadRequest) and any(gone in lowered for gone in _GONE)
        ):
            return Undeliverable(text)
        return ChannelError(text)

    async def send(
        self,
        target: Target,
        part: Part,
        *,
        markup: Markup | None = None,
        reply_to: int | None = None,
        retries: int | None = None,
    ) -> int:
        """Send one part as HTML (resent as plain text if Telegram cannot parse it): its id."""
        await self._pace(target)
        try:
            return await self._send(target, part.html, ParseMode.HTML, markup, reply_to, retries)
        except FormattingRejected as exc:
            log.warning("%s; sending that part as plain text", exc)
            return await self._send(target, part.plain, None, markup, reply_to, retries)

    async def _send(
        self,
        target: Target,
        text: str,
        parse_mode: str | None,
        markup: Markup | None,
        reply_to: int | None,
        retries: int | None = None,
    ) -> int:
        fields = {"chat_id": str(target.chat_id), "text": text}
        if parse_mode is not None:
            fields["parse_mode"] = parse_mode
        if target.thread_id is not None:
            fields["message_thread_id"] = str(target.thread_id)
        if reply_to is not None:
            fields["reply_parameters"] = _json(
                {"message_id": reply_to, "allow_sending_without_reply": True}
            )
        if markup is not None:
            fields["reply_markup"] = _json(markup.to_dict())
        url = f"{self.bot.base_url}/sendMessage"
        sent = await self.call(
            "sendMessage", lambda: self._request.post_fields(url, fields), retries=retries
        )
        message_id = sent.get("message_id") if isinstance(sent, dict) else None
        if not isinstance(message_id, int) or isinstance(message_id, bool):
            raise ChannelError("Telegram answered sendMessage without a message id")
        return message_id

    async def draft(self, target: Target, draft_id: int, text: str) -> None:
        """Show `text` (plain, so it always parses) as the draft of the answer being written.

        No waiting here: a 429 is raised as RateLimited at once, for the caller to skip
        drafts until `retry_after` has passed. A Bot API server without the method (older
        than 9.3, self-hosted) answers 404: drafts are then not tried again.
        """
        try:
            await self.call(
                "sendMessageDraft",
                lambda: self.bot.send_message_draft(
                    target.chat_id, draft_id, text, message_thread_id=target.thread_id
                ),
                retries=0,
            )
        except ChannelError as exc:
            if isinstance(exc.__cause__, InvalidToken):  # how PTB reads a 404
                self.drafts_unsupported = True
                log.warning("the Bot API server has no sendMessageDraft; answers show whole")
            raise

    async def edit(
        self,
        chat_id: int,
        message_id: int,
        part: Part,
        *,
        markup: InlineKeyboardMarkup | Keyboard | None = None,
        retries: int | None = None,
    ) -> None:
        """Replace a message's text; its inline keyboard becomes `markup` (None removes it)."""
        try:
            await self._edit(chat_id, message_id, part.html, ParseMode.HTML, markup, retries)
        except FormattingRejected as exc:
            log.warning("%s; editing with plain text", exc)
            await self._edit(chat_id, message_id, part.plain, None, markup, retries)

    async def _edit(
        self,
        chat_id: int,
        message_id: int,
        text: str,
        parse_mode: str | None,
        markup: InlineKeyboardMarkup | Keyboard | None,
        retries: int | None = None,
    ) -> None:
        if isinstance(markup, Keyboard):
            markup = markup.markup()
        await self.call(
            "editMessageText",
            lambda: self.bot.edit_message_text(
                text,
                chat_id=chat_id,
                message_id=message_id,
                parse_mode=parse_mode,
                reply_markup=markup,
            ),
            retries=retries,
        )

    async def document(
        self, target: Target, filename: str, content: bytes, caption: str
    ) -> Message:
        """Send a file with a short plain caption."""
        await self._pace(target)
        return await self.call(
            "sendDocument",
            lambda: self.bot.send_document(
                target.chat_id,
                InputFile(content, filename=filename),
                caption=caption,
                message_thread_id=target.thread_id,
            ),
        )

    async def photo(self, target: Target, data: bytes, *, caption: str = "") -> int:
        """Send an image as a photo, `caption` cut to Telegram's 1,024 characters: its id."""
        await self._pace(target)
        shown = caption if len(caption) <= MAX_CAPTION else caption[: MAX_CAPTION - 1] + "…"
        sent = await self.call(
            "sendPhoto",
            lambda: self.bot.send_photo(
                target.chat_id,
                InputFile(data, filename="picture"),
                caption=shown or None,
                message_thread_id=target.thread_id,
            ),
        )
        return sent.message_id

    async def voice(
        self,
        target: Target,
        audio: bytes,
        seconds: float,
        *,
        markup: Keyboard | None = None,
        reply_to: int | None = None,
    ) -> int:
        """Send OGG/Opus audio as a voice message (with `markup` under it): its id."""
        await self._pace(target)
        keyboard = None if markup is None else markup.markup()
        reply = (
            None
            if reply_to is None
            else ReplyParameters(reply_to, allow_sending_without_reply=True)
        )
        sent = await self.call(
            "sendVoice",
            lambda: self.bot.send_voice(
                target.chat_id,
                InputFile(audio, filename="answer.ogg"),
                duration=max(1, round(seconds)),
                message_thread_id=target.thread_id,
                reply_markup=keyboard,
                reply_parameters=reply,
            ),
        )
        return sent.message_id

    async def _pace(self, target: Target) -> None:
        limiter = self._limiter(target)
        if limiter is not None:
            await limiter.acquire()
        if self._overall is not None:
            await self._overall.acquire()

    def _limiter(self, target: Target) -> AsyncLimiter | None:
        policy = self.policy
        rate, period = (
            (policy.group_per_minute, 60.0) if target.is_group else (1.0, policy.private_interval)
        )
        if not rate or not period:
            return None
        limiter = self._chats.get(target.chat_id)
        if limiter is None:
            if len(self._chats) > 1024:  # forget chats whose bucket has drained
                for chat_id, old in list(self._chats.items()):
                    if old.has_capacity(old.max_rate):
                        del self._chats[chat_id]
            limiter = self._chats[target.chat_id] = AsyncLimiter(rate, period)
        return limiter

    @contextlib.asynccontextmanager
    async def typing(self, target: Target) -> AsyncIterator[Callable[[], None]]:
        """Show "typing…" after `policy.typing_delay` s, renewed every `typing_interval` s.

        Yields a function that stops it early (once the answer itself shows, as a draft).
        Most answers are done before the delay: they get a timer, not a task.
        """
        tasks: list[asyncio.Task[None]] = []

        def begin() -> None:
            name = f"typing:{target.chat_id}"
            tasks.append(asyncio.create_task(self._keep_typing(target), name=name))

        timer = asyncio.get_running_loop().call_later(self.policy.typing_delay, begin)

        def stop() -> None:
            timer.cancel()
            for task in tasks:
                task.cancel()

        try:
            yield stop
        finally:
            timer.cancel()
            await cancel_and_wait(*tasks)

    async def _keep_typing(self, target: Target) -> None:
        while True:
            try:
                await self.bot.send_chat_action(
                    target.chat_id, ChatAction.TYPING, message_thread_id=target.thread_id
                )
            except RetryAfter as exc:
                await asyncio.sleep(retry_seconds(exc))
                continue
            except TelegramError as exc:
                # Only a courtesy: the answer itself reports real delivery problems.
                log.debug("typing indicator failed: %s", exc)
            await asyncio.sleep(self.policy.typing_interval)
