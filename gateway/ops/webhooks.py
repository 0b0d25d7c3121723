"""`skillgate set-webhook`: register the platforms' webhooks (and Telegram's commands).

The server itself never registers anything at start-up. Each platform's part lives
in its own package (`channels/telegram/operator.py`, `channels/line/operator.py`),
imported only for a configured platform (start-up cost).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from gateway.config import Settings
from gateway.errors import ChannelError, ConfigError
from gateway.ops.steps import Step

if TYPE_CHECKING:
    from gateway.store import Store


@asynccontextmanager
async def _store(settings: Settings) -> AsyncIterator[Store]:
    from gateway.store import store_for

    async with store_for(settings) as store:
        yield store


async def run_set_webhook(
    settings: Settings, *, delete: bool = False, max_connections: int = 40, force: bool = False
) -> int:
    """Print one line per step; exit status 1 when anything failed."""
    if not settings.telegram_enabled and not settings.line_enabled:
        print("set-webhook: no channel configured (TELEGRAM_BOT_TOKEN, LINE_CHANNEL_*)")
        return 1
    jobs: list[tuple[str, Callable[[], Awaitable[list[Step]]]]] = []
    if settings.line_enabled:
        from gateway.channels.line.operator import line_register, line_unregister
    if settings.telegram_enabled:
        jobs.append(("telegram", lambda: _telegram_job(settings, delete, max_connections, force)))
    if settings.line_enabled:
        if delete:
            jobs.append(("line", lambda: line_unregister(settings)))
        else:
            jobs.append(("line", lambda: line_register(settings, force=force)))
    failed = False
    for name, job in jobs:
        try:
            steps = await job()
        except (ConfigError, ChannelError) as exc:
            print(f"{name}: fail {exc}")
            failed = True
            continue
        for step in steps:
            print(step.line())
            failed = failed or step.status == "fail"
    return 1 if failed else 0


async def _telegram_job(
    settings: Settings, delete: bool, max_connections: int, force: bool
) -> list[Step]:
    from gateway.channels.telegram.operator import telegram_register, telegram_unregister

    async with _store(settings) as store:
        if delete:
            return await telegram_unregister(settings, store)
        return await telegram_register(
            settings, store, max_connections=max_connections, force=force
        )
