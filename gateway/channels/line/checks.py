"""Doctor's LINE checks: is the bot known, and does its webhook point to us?"""

from __future__ import annotations

from gateway.channels.api import (
    SET_PUBLIC_URL,
    SET_WEBHOOK,
    ChannelError,
    Check,
    ConfigError,
    Settings,
    public_endpoint,
)
from gateway.channels.line.channel import WEBHOOK_PATH as LINE_PATH
from gateway.channels.line.operator import LINE_TIMEOUT, line_api, line_errors


async def line_checks(settings: Settings) -> list[Check]:
    """The bot's info and the webhook endpoint LINE posts to."""
    try:
        async with line_errors(settings), line_api(settings) as api:
            bot = await api.get_bot_info(_request_timeout=LINE_TIMEOUT)
            endpoint = await api.get_webhook_endpoint(_request_timeout=LINE_TIMEOUT)
    except ChannelError as exc:
        fix = (
            "issue a long-lived channel access token in the LINE Developers console"
            " (your channel, Messaging API tab) and set LINE_CHANNEL_ACCESS_TOKEN"
            " (`skillgate init` checks it)"
            if "401" in str(exc)
            else "check the server's outbound HTTPS and LINE_API_BASE_URL"
        )
        return [Check("line bot", "fail", str(exc), fix)]
    checks = [Check("line bot", "ok", f"{bot.display_name} ({bot.basic_id}, {bot.user_id})")]
    try:
        expected = public_endpoint(settings, LINE_PATH)
    except ConfigError as exc:
        checks.append(Check("line webhook", "fail", str(exc), SET_PUBLIC_URL))
        return checks
    if endpoint.endpoint != expected:
        shown = endpoint.endpoint or "nothing"
        checks.append(
            Check("line webhook", "fail", f"points to {shown}, not {expected}", SET_WEBHOOK)
        )
    elif not endpoint.active:
        checks.append(
            Check(
                "line webhook",
                "fail",
                f"{expected} is set but 'Use webhook' is off: LINE sends nothing",
                "turn on 'Use webhook' in the LINE Developers console"
                " (your channel, Messaging API tab, Webhook settings)",
            )
        )
    else:
        checks.append(Check("line webhook", "ok", f"{expected}, active"))
    return checks
