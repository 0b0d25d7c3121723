"""Telegram and LINE clients for the operator commands, with their errors translated.

The SDKs are imported when a client is made: importing LINE's messaging module
alone takes about two seconds.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from gateway.config import Settings
from gateway.errors import ChannelError
from gateway.logs import RedactSecrets

if TYPE_CHECKING:
    from telegram import Bot


def _clean(settings: Settings, text: str) -> str:
    """An SDK's message with every secret masked (a Bot API URL contains the token)."""
    return RedactSecrets(settings.secrets()).redact(text)


@asynccontextmanager
async def telegram_bot(settings: Settings) -> AsyncIterator[Bot]:
    """An initialised Bot (getMe done) for the configured token and API base."""
    from telegram import Bot

    assert settings.telegram_bot_token is not None
    bot = Bot(
        settings.telegram_bot_token.get_secret_value(), base_url=settings.telegram_api_base_url
    )
    async with bot:
        yield bot


@asynccontextmanager
async def telegram_errors(settings: Settings) -> AsyncIterator[None]:
    """Turn python-telegram-bot's errors into ChannelError."""
    from telegram.error import BadRequest, InvalidToken, NetworkError, TelegramError

    host = urlsplit(settings.telegram_api_base_url).netloc
    try:
        yield
    except InvalidToken as exc:
        raise ChannelError("Telegram rejected TELEGRAM_BOT_TOKEN") from exc
    except BadRequest as exc:
        raise ChannelError(f"Telegram refused: {_clean(settings, exc.message)}") from exc
    except NetworkError as exc:
        detail = _clean(settings, exc.message)
        raise ChannelError(f"cannot reach the Bot API at {host}: {detail}") from exc
    except TelegramError as exc:
        raise ChannelError(f"Telegram: {_clean(settings, exc.message)}") from exc


@asynccontextmanager
async def line_api(settings: Settings) -> AsyncIterator[Any]:
    """An AsyncMessagingApi for the configured access token and API host."""
    from linebot.v3.messaging import AsyncApiClient, AsyncMessagingApi, Configuration

    assert settings.line_channel_access_token is not None
    config = Configuration(
        access_token=settings.line_channel_access_token.get_secret_value(),
        host=settings.line_api_base_url,
    )
    async with AsyncApiClient(config) as client:
        yield AsyncMessagingApi(client)


def _line_message(body: Any) -> str:
    """The `message` of a LINE error body, or the body itself."""
    try:
        return str(json.loads(body)["message"])
    except (TypeError, ValueError, KeyError):
        return str(body or "").strip()[:200]


@asynccontextmanager
async def line_errors(settings: Settings) -> AsyncIterator[None]:
    """Turn line-bot-sdk's and aiohttp's errors into ChannelError."""
    import aiohttp
    from linebot.v3.messaging import ApiException

    host = urlsplit(settings.line_api_base_url).netloc
    try:
        yield
    except ApiException as exc:
        if exc.status == 401:
            raise ChannelError("LINE rejected LINE_CHANNEL_ACCESS_TOKEN (HTTP 401)") from exc
        message = _clean(settings, _line_message(exc.body))
        raise ChannelError(f"LINE answered HTTP {exc.status}: {message}") from exc
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise ChannelError(f"cannot reach the LINE API at {host}: {type(exc).__name__}") from exc
