"""LINE for the operator commands: a Messaging API client for the settings, errors translated.

`skillgate set-webhook` and `skillgate doctor` use these.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

import aiohttp
from linebot.v3.messaging import (
    ApiException,
    AsyncApiClient,
    AsyncMessagingApi,
    Configuration,
    SetWebhookEndpointRequest,
    TestWebhookEndpointRequest,
)

from gateway.channels.api import ChannelError, Settings, Step, mask, public_endpoint, secrets
from gateway.channels.line.channel import WEBHOOK_PATH
from gateway.channels.line.client import error_message
from gateway.channels.line.settings import LineSettings

LINE_TIMEOUT = 15.0
LINE_TEST_TIMEOUT = 30.0


@asynccontextmanager
async def line_api(settings: Settings) -> AsyncIterator[AsyncMessagingApi]:
    """An AsyncMessagingApi for the configured access token and API host."""
    ln = settings.section(LineSettings)
    assert ln.line_channel_access_token is not None
    config = Configuration(
        access_token=ln.line_channel_access_token.get_secret_value(),
        host=ln.line_api_base_url,
    )
    async with AsyncApiClient(config) as client:
        yield AsyncMessagingApi(client)


@asynccontextmanager
async def line_errors(settings: Settings) -> AsyncIterator[None]:
    """Turn line-bot-sdk's and aiohttp's errors into ChannelError."""
    ln = settings.section(LineSettings)
    host = urlsplit(ln.line_api_base_url).netloc
    try:
        yield
    except ApiException as exc:
        if exc.status == 401:
            raise ChannelError("LINE rejected LINE_CHANNEL_ACCESS_TOKEN (HTTP 401)") from exc
        message = mask(error_message(exc.body), secrets(settings))
        raise ChannelError(f"LINE answered HTTP {exc.status}: {message}") from exc
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise ChannelError(f"cannot reach the LINE API at {host}: {type(exc).__name__}") from exc


async def line_register(settings: Settings, *, force: bool = False) -> list[Step]:
    """Set the LINE webhook endpoint if it differs, then run LINE's webhook test."""
    url = public_endpoint(settings, WEBHOOK_PATH)
    steps: list[Step] = []
    async with line_errors(settings), line_api(settings) as api:
        current = await api.get_webhook_endpoint(_request_timeout=LINE_TIMEOUT)
        if current.endpoint == url and not force:
            steps.append(Step("line webhook", "unchanged", url))
        else:
            request = SetWebhookEndpointRequest(endpoint=url)
            await api.set_webhook_endpoint(request, _request_timeout=LINE_TIMEOUT)
            steps.append(Step("line webhook", "set", url))
        if not current.active:
            steps.append(
                Step(
                    "line webhook",
                    "warn",
                    "'Use webhook' is off, so LINE sends nothing: turn it on in the LINE"
                    " Developers console (your channel, Messaging API tab, Webhook settings)",
                )
            )
        result = await api.test_webhook_endpoint(
            TestWebhookEndpointRequest(endpoint=url), _request_timeout=LINE_TEST_TIMEOUT
        )
        outcome = f"{result.status_code} {result.reason}".strip()
        if result.success:
            steps.append(Step("line webhook test", "ok", f"LINE reached {url}: {outcome}"))
        else:
            steps.append(
                Step(
                    "line webhook test",
                    "fail",
                    f"LINE could not deliver to {url}: {outcome} {result.detail}".rstrip()
                    + "; is the service running and the reverse proxy forwarding /webhook/line?",
                )
            )
    return steps


async def line_unregister(settings: Settings) -> list[Step]:
    """LINE has no call that removes a webhook URL: say where to switch it off."""
    async with line_errors(settings), line_api(settings) as api:
        current = await api.get_webhook_endpoint(_request_timeout=LINE_TIMEOUT)
    if not current.active:
        return [Step("line webhook", "absent", "'Use webhook' is already off")]
    return [
        Step(
            "line webhook",
            "warn",
            f"still {current.endpoint}: the Messaging API cannot remove it; turn off"
            " 'Use webhook' in the LINE Developers console (Messaging API tab)",
        )
    ]
