"""After start-up: load the model client, then keep long-lived objects out of full GC passes.

A full (generation 2) collection walks every object the process holds; with the
libraries loaded that is about 150,000 objects and a 50-100 ms pause for every chat
in flight, a few times per thousand answers. Nearly all of them live as long as the
process, so once the server is up they are collected one last time and frozen
(`gc.freeze`), and later full passes visit only what was made since. The model client
is imported first (in a thread, so webhooks keep being answered) because it is most
of what the first answer would otherwise add. Work start-up left for later (`prepare`:
the skill index of a large library) is done here too, before the freeze.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import logging
import time
from collections.abc import Callable

log = logging.getLogger(__name__)


def freeze_imports() -> None:
    """Keep what the imports made out of start-up's own collections: building a large
    library's records would otherwise walk every library object a few times over."""
    gc.freeze()


async def settle(load_model_client: bool, prepare: Callable[[], None] = lambda: None) -> None:
    """Import the model client if one is configured, `prepare`, then collect and freeze."""
    started = time.monotonic()
    prepare()  # on the loop: an answer arriving meanwhile would need the same work first
    if load_model_client:
        await asyncio.to_thread(importlib.import_module, "openai")
    gc.collect()
    gc.freeze()
    log.debug(
        "settled in %.2f s: %d objects frozen", time.monotonic() - started, gc.get_freeze_count()
    )
