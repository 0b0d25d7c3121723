"""Downloads at once, and bytes of downloads held in memory, across all chats.

Each download reserves its kind's cap (what it may grow to) before it starts and keeps it
until its turn is done with the bytes; past either bound a download waits, and past its
patience it is refused (MediaUnavailable: "send it again in a moment").
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from gateway.errors import MediaUnavailable


class Held:
    """The room downloads take: at most `downloads` at once and `total_bytes` held."""

    def __init__(self, total_bytes: int, downloads: int) -> None:
        self.total_bytes = total_bytes
        self.free_bytes = total_bytes
        self._room = asyncio.Condition()
        self._slots = asyncio.Semaphore(downloads)

    @contextlib.asynccontextmanager
    async def bytes(self, size: int, patience: float) -> AsyncIterator[None]:
        """Hold `size` bytes (at most all of them) while the block runs."""
        size = min(size, self.total_bytes)
        try:
            async with asyncio.timeout(patience), self._room:
                await self._room.wait_for(lambda: self.free_bytes >= size)
                self.free_bytes -= size
        except TimeoutError:
            raise MediaUnavailable(f"no room for a download within {patience:g} s") from None
        try:
            yield
        finally:
            async with self._room:
                self.free_bytes += size
                self._room.notify_all()

    @contextlib.asynccontextmanager
    async def slot(self, patience: float) -> AsyncIterator[None]:
        """One of the downloads at once, while the block runs."""
        try:
            async with asyncio.timeout(patience):
                await self._slots.acquire()
        except TimeoutError:
            raise MediaUnavailable(f"no download slot within {patience:g} s") from None
        try:
            yield
        finally:
            self._slots.release()
