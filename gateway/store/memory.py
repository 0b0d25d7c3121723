"""Per-user memory: entries by (channel, user id), and who opted in to it in which group."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from gateway.core.memory import MemoryEntry
from gateway.store.sql import Conn, QueriesBase, marks, query, transaction


async def turn_memory(
    c: Conn, channel: str, chat_id: str, user_id: str | None, *, in_group: bool
) -> list[str] | None:
    """The entries a turn may use, oldest first; None where memory is not for this turn.

    Read inside the turn's own transaction: the owner's entries only, in a group only after
    the owner opted in there.
    """
    if user_id is None:
        return None
    if in_group and not await _opted_in(c, channel, chat_id, user_id):
        return None
    rows = await c.fetch(
        "select text from user_memory where channel = ? and user_id = ? order by id",
        channel,
        user_id,
    )
    return [str(r["text"]) for r in rows]


_OPTED_IN = "select 1 from memory_opt_ins where channel = ? and chat_id = ? and user_id = ?"


def memory_item(c: Conn, *, in_group: bool) -> str:
    """`turn_memory` as one select item `memory` of a larger statement: the entries as a JSON
    list, null where memory is not for this turn (`memory_in` reads it). Its marks
    (`memory_args`) take, in a group, the channel, the chat and the user, then the channel
    and the user."""
    entries = c.dialect.json_list(
        "text", "from user_memory where channel = ? and user_id = ?", "id"
    )
    if in_group:
        entries = f"case when exists ({_OPTED_IN}) then {entries} end"
    return f"{entries} as memory"


def memory_args(channel: str, chat_id: str, user_id: str, *, in_group: bool) -> list[Any]:
    """The values of `memory_item`'s marks."""
    return [*((channel, chat_id, user_id) if in_group else ()), channel, user_id]


def memory_in(row: dict[str, Any]) -> list[str] | None:
    """The entries in a row selected with `memory_item`."""
    value = row["memory"]
    return None if value is None else [str(v) for v in json.loads(value)]


async def _opted_in(c: Conn, channel: str, chat_id: str, user_id: str) -> bool:
    return (
        await c.fetchval(
            _OPTED_IN,
            channel,
            chat_id,
            user_id,
        )
        is not None
    )


async def delete_user_memory(c: Conn, channel: str, user_id: str) -> int:
    """Every entry and opt-in of one user (forget)."""
    await c.execute(
        "delete from memory_opt_ins where channel = ? and user_id = ?", channel, user_id
    )
    return await c.execute(
        "delete from user_memory where channel = ? and user_id = ?", channel, user_id
    )


class MemoryQueries(QueriesBase):
    """What users asked the bot to remember."""

    @transaction
    async def remember(
        self, c: Conn, channel: str, user_id: str, text: str, *, limit_chars: int, now: float
    ) -> tuple[MemoryEntry, int]:
        """Keep an entry; the oldest ones that no longer fit within `limit_chars` go."""
        await c.lock(f"memory\0{channel}\0{user_id}")
        row = await c.fetchrow(
            "insert into user_memory (channel, user_id, text, created_at) values (?, ?, ?, ?)"
            " returning *",
            channel,
            user_id,
            text,
            now,
        )
        assert row is not None
        rows = await c.fetch(
            "select id, text from user_memory where channel = ? and user_id = ? order by id desc",
            channel,
            user_id,
        )
        used, drop = 0, []
        for r in rows:
            used += len(str(r["text"]))
            if used > limit_chars:
                drop.append(int(r["id"]))
        if drop:
            await c.execute(f"delete from user_memory where id in ({marks(drop)})", *drop)
        return MemoryEntry.model_validate(row), len(drop)

    @query
    async def memory_entries(self, c: Conn, channel: str, user_id: str) -> list[MemoryEntry]:
        """The user's entries, oldest first."""
        rows = await c.fetch(
            "select * from user_memory where channel = ? and user_id = ? order by id",
            channel,
            user_id,
        )
        return [MemoryEntry.model_validate(r) for r in rows]

    @query
    async def forget_memory(
        self, c: Conn, channel: str, user_id: str, entry_ids: Sequence[int] | None = None
    ) -> int:
        """Delete some of the user's entries (None: all of them); how many went."""
        if entry_ids is None:
            return await c.execute(
                "delete from user_memory where channel = ? and user_id = ?", channel, user_id
            )
        wanted = list(entry_ids)
        if not wanted:
            return 0
        return await c.execute(
            "delete from user_memory where channel = ? and user_id = ?"
            f" and id in ({marks(wanted)})",
            channel,
            user_id,
            *wanted,
        )

    @query
    async def memory_opted_in(self, c: Conn, channel: str, chat_id: str, user_id: str) -> bool:
        """Whether the user let the bot use their memory in this group."""
        return await _opted_in(c, channel, chat_id, user_id)

    @query
    async def set_memory_opt_in(
        self, c: Conn, channel: str, chat_id: str, user_id: str, on: bool, now: float
    ) -> None:
        """Opt in to (or out of) memory in one group."""
        if not on:
            await c.execute(
                "delete from memory_opt_ins where channel = ? and chat_id = ? and user_id = ?",
                channel,
                chat_id,
                user_id,
            )
            return
        await c.execute(
            "insert into memory_opt_ins (channel, chat_id, user_id, created_at)"
            " values (?, ?, ?, ?) on conflict (channel, chat_id, user_id) do nothing",
            channel,
            chat_id,
            user_id,
            now,
        )

    @query
    async def withhold_messages(self, c: Conn, message_ids: Sequence[int]) -> None:
        """Keep these messages out of synthesis evidence (a turn that wrote memory)."""
        wanted = list(message_ids)
        if wanted:
            await c.execute(
                f"update messages set withheld = 1 where id in ({marks(wanted)})", *wanted
            )
