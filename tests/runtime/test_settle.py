"""What serve leaves until its first answer went out, and the collector it pauses meanwhile."""

from __future__ import annotations

import asyncio
import gc

import pytest

from gateway.runtime.settle import FirstAnswer, pause_collection, settle


async def test_work_that_waits_for_the_first_answer_starts_only_once_it_went_out() -> None:
    first = FirstAnswer(at_most=60)
    done: list[str] = []

    async def work() -> str:
        done.append("ran")
        return "looked"

    waiting = asyncio.create_task(first.then(work))
    for _ in range(20):
        await asyncio.sleep(0)
    assert done == [] and not waiting.done()
    first.answered()
    assert await waiting == "looked"
    assert await first.then(work) == "looked"  # once answered, at once


async def test_work_waits_at_most_its_time_when_nobody_asks() -> None:
    first = FirstAnswer(at_most=0)

    async def work() -> int:
        return 1

    assert await asyncio.wait_for(first.then(work), 5) == 1


async def test_settling_brings_the_collector_back_and_freezes_what_start_up_made() -> None:
    pause_collection()
    try:
        assert not gc.isenabled()
        built: list[bool] = []
        await settle(False, lambda: built.append(True))
        assert gc.isenabled() and built == [True]
        assert gc.get_freeze_count() > 0
    finally:
        gc.enable()
        gc.unfreeze()


async def test_the_collector_comes_back_even_when_settling_fails() -> None:
    def broken() -> None:
        raise RuntimeError("index")

    pause_collection()
    try:
        with pytest.raises(RuntimeError):
            await settle(False, broken)
        assert gc.isenabled()
    finally:
        gc.enable()
