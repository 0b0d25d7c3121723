"""Stopping a background task: cancel it and wait until it has ended."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any


async def cancel_and_wait(
    *tasks: asyncio.Future[Any] | None, quiet: tuple[type[BaseException], ...] = ()
) -> None:
    """Cancel every one of `tasks` (None is skipped), then wait for each to end.

    All are cancelled before the first is waited for. A task's cancellation is not raised;
    an error it ended with is, unless it is one of the `quiet` kinds.
    """
    running = [task for task in tasks if task is not None]
    for task in running:
        task.cancel()
    for task in running:
        with contextlib.suppress(asyncio.CancelledError, *quiet):
            await task
