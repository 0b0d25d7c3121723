"""Per-user memory: what a user asked the bot to remember, bounded, and kept by user, not chat.

Explicit only: the user's /remember and the model's `remember` tool both come here, so the
same rules hold for both. An entry is keyed by (platform, sender id), never by chat: in a
group it is read for its owner only, and only after the owner opted in there (the store
checks that in the turn's own query). Entries are scanned for secrets and refused whole;
at most MEMORY_CHARS characters are kept per user, the oldest entries dropped first.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from pydantic import BaseModel

from gateway.core.secrets import find_secret

MEMORY_CHARS = 1500
"""What one user's memory holds at most, all entries together."""

Refusal = Literal["empty", "too long", "secret"]


class MemoryEntry(BaseModel):
    """One thing a user asked the bot to remember."""

    id: int
    channel: str
    user_id: str
    text: str
    created_at: float


@dataclass(frozen=True)
class Remembered:
    """The entry kept (and how many old ones went to make room), or why it was refused."""

    entry: MemoryEntry | None = None
    dropped: int = 0
    refused: Refusal | None = None


class MemoryStore(Protocol):
    """Where entries are kept (`gateway.store.memory`)."""

    async def remember(
        self, channel: str, user_id: str, text: str, *, limit_chars: int, now: float
    ) -> tuple[MemoryEntry, int]:
        """Keep `text`, dropping the oldest entries past `limit_chars`; returns it and the count."""
        ...


def clean(text: str) -> str:
    """An entry as kept: one line, spaces collapsed (it is shown in a numbered list)."""
    return " ".join(text.split())


class Memory:
    """Keeps entries for both ways in (the command and the tool), under one set of rules."""

    def __init__(
        self,
        store: MemoryStore,
        *,
        known: Sequence[str] = (),
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.known = tuple(known)
        """The gateway's configured secrets, refused in any encoding."""
        self.clock = clock

    async def remember(self, channel: str, user_id: str, text: str) -> Remembered:
        """Keep `text` for the user, or say why not (never the secret it found)."""
        entry = clean(text)
        if not entry:
            return Remembered(refused="empty")
        if len(entry) > MEMORY_CHARS:
            return Remembered(refused="too long")
        if find_secret([entry], self.known) is not None:
            return Remembered(refused="secret")
        kept, dropped = await self.store.remember(
            channel, user_id, entry, limit_chars=MEMORY_CHARS, now=self.clock()
        )
        return Remembered(entry=kept, dropped=dropped)
