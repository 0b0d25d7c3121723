"""The answer while the model is still writing it: pieces in, the visible text out on demand.

The model call appends each piece of content as it arrives (`add`, a list append and an
event); a channel that shows partial text reads `visible()` only when it is about to show
it, about once a second, so the per-chunk cost stays flat however long the answer grows.
Nothing here is stored: the answer that counts is the final one, stored with its trace.
"""

from __future__ import annotations

import asyncio

from gateway.core.llm_wire import strip_think

_OPEN_TAG = "<think>"


class PartialText:
    """The text of the model call in progress; each new call (a retry, a tool round) resets it."""

    def __init__(self) -> None:
        self._pieces: list[str] = []
        self._changed = asyncio.Event()
        self._done = asyncio.Event()
        self.first_piece_at: float | None = None
        """Monotonic time of the first piece of this answer (for the benchmark and logs)."""

    def add(self, piece: str) -> None:
        """Append content from one chunk."""
        if piece:
            if self.first_piece_at is None:
                self.first_piece_at = asyncio.get_running_loop().time()
            self._pieces.append(piece)
            self._changed.set()

    def reset(self) -> None:
        """A new model call starts: what the last one wrote is no longer the answer."""
        if self._pieces:
            self._pieces.clear()
            self._changed.set()

    def close(self) -> None:
        """The model is done (or failed): readers stop waiting."""
        self._done.set()
        self._changed.set()

    @property
    def closed(self) -> bool:
        return self._done.is_set()

    async def wait_closed(self) -> None:
        await self._done.wait()

    async def changed(self) -> None:
        """Wait until something was added, reset or the text closed since the last wait."""
        await self._changed.wait()
        self._changed.clear()

    def visible(self) -> str:
        """The text so far as a user may see it: no `<think>` block, no half-written tag."""
        text = "".join(self._pieces)
        if "<" in text:
            text, _ = strip_think(text)
            cut = text.rfind("<", max(0, len(text) - len(_OPEN_TAG)))
            if cut >= 0 and _OPEN_TAG.startswith(text[cut:].lower()):
                text = text[:cut]
        return text.strip()
