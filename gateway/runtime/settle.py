"""After start-up: load the chat call's transport, then keep long-lived objects out of GC.

A full (generation 2) collection walks every object the process holds; with the
libraries loaded that is about 150,000 objects and a 50-100 ms pause for every chat
in flight, a few times per thousand answers. Nearly all of them live as long as the
process, so once the server is up they are collected one last time and frozen
(`gc.freeze`), and later full passes visit only what was made since. The chat call's
transport (httpx and its aiohttp transport, 3 MB) is imported first, in a thread so webhooks
keep being answered, because the first answer would otherwise wait for it; the openai client
is not: nothing on the chat path or the look at the model uses it (`core/llm_http`). Work
start-up left for later (`prepare`: the skill index of a large library) is done here too,
before the freeze.

The cyclic collector waits for it (`pause_collection`): its passes over what start-up
makes, nearly all of it kept, cost more than they find. None of the work starts before
the server's first answer went out (`FirstAnswer`), or a moment after it started serving
when nobody asks: a thread importing a package holds the interpreter against the event
loop, and the index is built on the loop, so either would hold up the first /healthz.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")

AT_MOST_SECONDS = 1.0
"""How long work that waits for the first answer waits when no request comes."""


class FirstAnswer:
    """Whether the server's first answer went out; what can wait until then awaits `sent`."""

    def __init__(self, at_most: float = AT_MOST_SECONDS) -> None:
        self.at_most = at_most
        self._sent = asyncio.Event()

    def answered(self) -> None:
        self._sent.set()

    async def sent(self) -> None:
        """Return once the first answer went out, or `at_most` seconds after the first wait."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.at_most):
                await self._sent.wait()
        self._sent.set()  # whatever waits next goes on at once

    async def then(self, work: Callable[[], Awaitable[T]]) -> T:
        """`work`, once the first answer went out (see `sent`)."""
        await self.sent()
        return await work()


def pause_collection() -> None:
    """No cyclic collection until `settle`: start-up makes about 190,000 objects that live as
    long as the process and next to no garbage, and the collector's passes over them were a
    fifth of the imports' CPU."""
    gc.disable()


def freeze_imports() -> None:
    """Keep what the imports made out of start-up's own collections: building a large
    library's records would otherwise walk every library object a few times over."""
    gc.freeze()


async def settle(
    load_model_client: bool,
    prepare: Callable[[], None] = lambda: None,
    *,
    load_openai: bool = False,
) -> None:
    """Import the chat call's transport if a model is configured, and the openai client if
    a feature that uses it is on (speech, embeddings), `prepare`, then collect, freeze and
    collect from then on (see `pause_collection`)."""
    started = time.monotonic()
    try:
        prepare()  # on the loop: an answer arriving meanwhile would need the same work first
        if load_model_client:
            await asyncio.to_thread(importlib.import_module, "httpx_aiohttp")
        if load_openai:
            await asyncio.to_thread(importlib.import_module, "openai")
        gc.collect()
        gc.freeze()
    finally:
        gc.enable()
    log.debug(
        "settled in %.2f s: %d objects frozen", time.monotonic() - started, gc.get_freeze_count()
    )
