"""`skillgate init` for LINE: check the credentials, and learn an admin's user id by a code.

LINE delivers messages only by webhook, so the admin's id comes through one: while the
gateway is not running yet, `init` listens for a short while on the address the reverse
proxy forwards `SKILLGATE_PUBLIC_URL` to (the one `skillgate serve` will use), checks each
post's signature with the channel secret, and takes the user id from the text message that
carries the one-time code. Anything else posted meanwhile is answered 200 and left alone.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp import web
from linebot.v3.messaging import (
    ApiException,
    AsyncApiClient,
    AsyncMessagingApi,
    Configuration,
    ReplyMessageRequest,
    SetWebhookEndpointRequest,
    TextMessage,
)
from linebot.v3.webhook import SignatureValidator

from gateway.channels.api import ChannelError, language_of, mask, texts_for
from gateway.channels.line.channel import WEBHOOK_PATH
from gateway.channels.line.client import error_message
from gateway.channels.line.dialect import ADMIN_RECORDED

TIMEOUT = 15.0
MAX_BODY = 1024 * 1024


@dataclass(frozen=True)
class LineBotInfo:
    """What the bot info API says."""

    name: str
    basic_id: str
    user_id: str


@dataclass(frozen=True)
class WebhookState:
    """The webhook endpoint LINE holds after `point_webhook`."""

    endpoint: str
    changed: bool
    active: bool


def _config(access_token: str, base_url: str) -> Configuration:
    return Configuration(access_token=access_token, host=base_url)


def _translate(exc: Exception) -> ChannelError:
    if isinstance(exc, ApiException):
        if exc.status == 401:
            return ChannelError("LINE does not accept this channel access token (HTTP 401)")
        return ChannelError(f"LINE answered HTTP {exc.status}: {mask(error_message(exc.body))}")
    return ChannelError(f"cannot reach the LINE API: {type(exc).__name__}")


@asynccontextmanager
async def _api(access_token: str, base_url: str) -> AsyncIterator[AsyncMessagingApi]:
    """A Messaging API client whose failures come out as ChannelError."""
    try:
        async with AsyncApiClient(_config(access_token, base_url)) as client:
            yield AsyncMessagingApi(client)
    except (ApiException, aiohttp.ClientError, TimeoutError) as exc:
        raise _translate(exc) from exc


async def bot_info(access_token: str, base_url: str) -> LineBotInfo:
    """The bot's name, basic id and user id; ChannelError when LINE refuses the token."""
    async with _api(access_token, base_url) as api:
        info = await api.get_bot_info(_request_timeout=TIMEOUT)
    return LineBotInfo(info.display_name, info.basic_id, info.user_id)


async def point_webhook(access_token: str, base_url: str, public_url: str) -> WebhookState:
    """Set the webhook URL to `public_url` + /webhook/line unless it is that already."""
    wanted = public_url.rstrip("/") + WEBHOOK_PATH
    async with _api(access_token, base_url) as api:
        current = await api.get_webhook_endpoint(_request_timeout=TIMEOUT)
        changed = current.endpoint != wanted
        if changed:
            request = SetWebhookEndpointRequest(endpoint=wanted)
            await api.set_webhook_endpoint(request, _request_timeout=TIMEOUT)
    return WebhookState(wanted, changed, bool(current.active))


async def webhook_active(access_token: str, base_url: str) -> bool:
    """Whether 'Use webhook' is on (only the LINE Developers console can switch it)."""
    async with _api(access_token, base_url) as api:
        current = await api.get_webhook_endpoint(_request_timeout=TIMEOUT)
    return bool(current.active)


def code_sender(payload: Any, code: str) -> tuple[str, str | None] | None:
    """(user id, reply token) of the 1:1 text message that is `code`, if the body holds one."""
    events = payload.get("events") if isinstance(payload, dict) else None
    for event in events if isinstance(events, list) else []:
        if not isinstance(event, dict) or event.get("type") != "message":
            continue
        message, source = event.get("message"), event.get("source")
        if not (isinstance(message, dict) and isinstance(source, dict)):
            continue
        text = message.get("text")
        user = source.get("userId")
        if source.get("type") != "user" or not isinstance(user, str) or not isinstance(text, str):
            continue
        if text.strip() == code:
            token = event.get("replyToken")
            return user, token if isinstance(token, str) else None
    return None


class CodeListener:
    """A short-lived webhook receiver that waits for the one-time code."""

    def __init__(self, channel_secret: str, code: str) -> None:
        self.code = code
        self._validator = SignatureValidator(channel_secret)
        self._found: asyncio.Future[tuple[str, str | None]] | None = None
        self._runner: web.AppRunner | None = None

    async def start(self, host: str, port: int) -> None:
        """Listen; OSError when the address is taken (a gateway already running there)."""
        self._found = asyncio.get_running_loop().create_future()
        app = web.Application(client_max_size=MAX_BODY)
        app.router.add_post(WEBHOOK_PATH, self._webhook)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        try:
            await web.TCPSite(self._runner, host, port).start()
        except OSError:
            await self.close()
            raise

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def wait(self, within: float) -> tuple[str, str | None] | None:
        """(user id, reply token) of the sender of the code, or None after `within` seconds."""
        assert self._found is not None
        try:
            return await asyncio.wait_for(asyncio.shield(self._found), within)
        except TimeoutError:
            return None

    async def _webhook(self, request: web.Request) -> web.Response:
        body = await request.text()
        signature = request.headers.get("X-Line-Signature", "")
        if not signature.isascii() or not self._validator.validate(body, signature):
            return web.json_response({"error": "invalid signature"}, status=401)
        try:
            found = code_sender(json.loads(body), self.code)
        except json.JSONDecodeError:
            return web.json_response({"error": "not JSON"}, status=400)
        if found is not None and self._found is not None and not self._found.done():
            self._found.set_result(found)
        return web.json_response({})


async def thank(access_token: str, base_url: str, user_id: str, reply_token: str) -> None:
    """Answer the code's message in the admin's app language (a courtesy: on a failure the
    caller says so and goes on)."""
    async with _api(access_token, base_url) as api:
        try:
            profile = await api.get_profile(user_id, _request_timeout=TIMEOUT)
            language = language_of(profile.language)
        except ApiException:  # no profile for this user: the default language
            language = None
        text = texts_for(language)(ADMIN_RECORDED)
        request = ReplyMessageRequest(
            reply_token=reply_token, messages=[TextMessage(text=text, quick_reply=None)]
        )
        await api.reply_message(request, _request_timeout=TIMEOUT)
