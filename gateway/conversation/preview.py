"""Showing an answer while it is written: at most one update per interval, never in the way.

A platform that can show partial text (Telegram's drafts, or one message edited in place)
gives `preview` the function that shows a text; this module decides when to call it. The
rules, the same for every platform: nothing is shown before there is text; an update
goes out at most once per `interval` and only when the text grew; a rate limit is waited
out for its `retry_after` (the updates in between are skipped, not queued); any other
refusal ends the previews of this answer, which is then delivered whole as before. The
final answer is never a preview: it is delivered by the channel's `deliver` once the
model is done, with the platform's own retries, after the last preview has returned.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable

from gateway.core.stream import PartialText
from gateway.errors import ChannelError, RateLimited

log = logging.getLogger(__name__)

Show = Callable[[str], Awaitable[None]]


async def preview(
    partial: PartialText,
    show: Show,
    *,
    interval: float,
    first_shown: Callable[[], None] | None = None,
    keepalive: float | None = None,
) -> int:
    """Show `partial` as it grows until it is closed; the number of updates shown.

    With `keepalive`, the last text is shown again after that many seconds without a
    change (a platform's preview that expires on its own, while the model thinks).
    """
    loop = asyncio.get_running_loop()
    shown, last, next_at = 0, "", 0.0
    while not partial.closed:
        again = await _changed(partial, keepalive if shown else None)
        wait = next_at - loop.time()
        if wait > 0 and not partial.closed:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await partial.wait_closed()
        if partial.closed:
            break
        text = partial.visible()
        if not text or (text == last and not again):
            continue
        try:
            await show(text)
        except RateLimited as exc:
            log.info("preview rate limited; next one in %.1f s", exc.retry_after)
            next_at = loop.time() + max(exc.retry_after, interval)
            continue
        except ChannelError as exc:
            log.info("previews stopped for this answer: %s", exc)
            break
        if not shown and first_shown is not None:
            first_shown()
        shown += 1
        # Counted from the answer to this update: the next one reaches the platform at
        # least `interval` after this one did, however long the call took.
        last, next_at = text, loop.time() + interval
    return shown


async def _changed(partial: PartialText, keepalive: float | None) -> bool:
    """Wait for a change; True when `keepalive` seconds passed without one instead."""
    if keepalive is None:
        await partial.changed()
        return False
    try:
        async with asyncio.timeout(keepalive):
            await partial.changed()
    except TimeoutError:
        return True
    return False


@contextlib.asynccontextmanager
async def previewing(
    show: Show,
    *,
    interval: float,
    first_shown: Callable[[], None] | None = None,
    keepalive: float | None = None,
) -> AsyncIterator[PartialText]:
    """A PartialText for the model to fill, previewed until the block ends.

    On the way out the previews stop, and the one in flight (if any) is awaited, so the
    final answer that follows is never overtaken by a late preview.
    """
    partial = PartialText()
    task = asyncio.create_task(
        preview(partial, show, interval=interval, first_shown=first_shown, keepalive=keepalive),
        name="preview",
    )
    try:
        yield partial
    finally:
        partial.close()
        try:
            await task
        except Exception:  # a preview is a courtesy: it never costs the answer
            log.warning("previewing an answer failed", exc_info=True)
