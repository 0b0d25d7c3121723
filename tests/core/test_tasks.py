"""Stopping background tasks: every one cancelled first, then each waited for."""

from __future__ import annotations

import asyncio

import pytest

from gateway.core.tasks import cancel_and_wait


async def forever(ended: list[str], name: str) -> None:
    try:
        await asyncio.Event().wait()
    finally:
        ended.append(name)


async def test_every_task_is_cancelled_and_ended_when_it_returns() -> None:
    ended: list[str] = []
    tasks = [asyncio.create_task(forever(ended, name)) for name in ("a", "b")]
    await asyncio.sleep(0)
    await cancel_and_wait(tasks[0], None, tasks[1])
    assert sorted(ended) == ["a", "b"]
    assert all(task.cancelled() for task in tasks)


async def test_an_error_a_task_ended_with_is_raised_unless_quiet() -> None:
    async def fail() -> None:
        raise ValueError("broken")

    task = asyncio.create_task(fail())
    await asyncio.wait([task])
    with pytest.raises(ValueError, match="broken"):
        await cancel_and_wait(task)
    await cancel_and_wait(task, quiet=(ValueError,))


async def test_nothing_to_stop() -> None:
    await cancel_and_wait()
    await cancel_and_wait(None)
