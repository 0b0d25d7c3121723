"""/remember and /memory: what a user asks the bot to keep about them, and seeing or deleting it.

Memory belongs to the sender, never to the chat, so it is listed only in the sender's
private chat; in a group the sender opts in (`/memory on`) before it is read or written
there. A message without a sender id (a LINE group message without a userId) reads and
writes nothing. The rules an entry passes are `gateway.core.memory`'s, the same for the
model's `remember` tool.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Protocol

from gateway.core.memory import MEMORY_CHARS, Memory, MemoryEntry
from gateway.core.models import ChatRef
from gateway.i18n import N_, Np_, Texts

REMEMBER_COMMAND = ("remember", N_("Ask me to remember something about you"))
MEMORY_COMMAND = ("memory", N_("See or delete what I remember about you"))

REMEMBERED = N_("📝 Remembered: “{entry}”")
DROPPED = Np_(
    "To make room, I forgot your oldest entry.", "To make room, I forgot your {n} oldest entries."
)
REMEMBER_HOW = N_("Say what to remember after the command, for example: /remember my name is Alice")
TOO_LONG = N_("That is too long to remember: at most {limit} characters.")
SECRET = N_("I won't remember that: it looks like a password or a key. Keep those to yourself.")
NOTHING = N_("I remember nothing about you yet. Tell me with /remember followed by what to keep.")
LISTED = N_(
    "What I remember about you:\n{entries}\n\nDelete one with /memory delete and its number,"
    " or all of it with /memory clear."
)
NO_ENTRY = N_("There is no entry {number}. Send /memory to see the list.")
DELETED = N_("Deleted.")
CLEARED = N_("Done: I remember nothing about you any more.")
PRIVATE = N_(
    "What I remember about you is private: send /memory in a private chat with me to see it."
    " Here, /memory on lets me use it in this group, and /memory off stops that."
)
OPTED_IN = N_(
    "From now on I use what you asked me to remember in this group too. /memory off stops it."
)
OPTED_OUT = N_("I no longer use what I remember about you in this group.")
GROUP_FIRST = N_("In this group I remember things for you only after you allow it with /memory on.")
NO_SENDER = N_("I can't tell who sent this, so I can't remember anything for you here.")
DISABLED = N_("Memory is turned off on this gateway.")


class MemoryCommandStore(Protocol):
    """Listing, deleting and opting in (`gateway.store.memory`)."""

    async def memory_entries(self, channel: str, user_id: str) -> list[MemoryEntry]: ...

    async def forget_memory(
        self, channel: str, user_id: str, entry_ids: Sequence[int] | None = None
    ) -> int: ...

    async def memory_opted_in(self, channel: str, chat_id: str, user_id: str) -> bool: ...

    async def set_memory_opt_in(
        self, channel: str, chat_id: str, user_id: str, on: bool, now: float
    ) -> None: ...


def remembered_text(texts: Texts, entry: str, dropped: int) -> str:
    """What the user is told about an entry kept (by the command or the model's tool)."""
    said = texts(REMEMBERED, entry=entry)
    if dropped:
        said += "\n" + texts.plural(DROPPED, dropped)
    return said


class MemoryCommands:
    """The two commands, for one channel."""

    def __init__(
        self,
        memory: Memory | None,
        store: MemoryCommandStore,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.memory = memory
        """None when SKILLGATE_MEMORY is off."""
        self.store = store
        self.clock = clock

    @property
    def enabled(self) -> bool:
        return self.memory is not None

    async def remember(self, chat: ChatRef, text: str, texts: Texts) -> str:
        """/remember TEXT: what to tell the user."""
        user = chat.user_id
        if self.memory is None:
            return texts(DISABLED)
        if user is None:
            return texts(NO_SENDER)
        if chat.is_group and not await self.store.memory_opted_in(chat.channel, chat.chat_id, user):
            return texts(GROUP_FIRST)
        if not text.strip():
            return texts(REMEMBER_HOW)
        done = await self.memory.remember(chat.channel, user, text)
        if done.refused == "too long":
            return texts(TOO_LONG, limit=MEMORY_CHARS)
        if done.refused is not None:
            return texts(SECRET)
        assert done.entry is not None
        return remembered_text(texts, done.entry.text, done.dropped)

    async def command(self, chat: ChatRef, argument: str, texts: Texts) -> str:
        """/memory (list), /memory delete N, /memory clear; in a group /memory on|off."""
        user = chat.user_id
        if self.memory is None:
            return texts(DISABLED)
        if user is None:
            return texts(NO_SENDER)
        words = argument.lower().split()
        if chat.is_group:
            if words[:1] not in (["on"], ["off"]):
                return texts(PRIVATE)
            on = words[0] == "on"
            await self.store.set_memory_opt_in(chat.channel, chat.chat_id, user, on, self.clock())
            return texts(OPTED_IN if on else OPTED_OUT)
        entries = await self.store.memory_entries(chat.channel, user)
        if words[:1] == ["clear"]:
            await self.store.forget_memory(chat.channel, user)
            return texts(CLEARED)
        if words[:1] == ["delete"]:
            number = words[1] if len(words) > 1 else ""
            if not number.isdigit() or not 1 <= int(number) <= len(entries):
                return texts(NO_ENTRY, number=number or "?")
            await self.store.forget_memory(chat.channel, user, [entries[int(number) - 1].id])
            return texts(DELETED)
        if not entries:
            return texts(NOTHING)
        listed = "\n".join(f"{n}. {e.text}" for n, e in enumerate(entries, 1))
        return texts(LISTED, entries=listed)
