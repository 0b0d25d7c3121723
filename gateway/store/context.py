"""Group context: a group's last unaddressed messages, bounded as they are kept, taken once."""

from __future__ import annotations

from gateway.core.records import GroupLine
from gateway.store.sql import Conn, QueriesBase, marks, transaction


async def take_group_lines(c: Conn, channel: str, chat_id: str, since: float) -> list[GroupLine]:
    """The chat's lines kept since `since`, oldest first; all its lines are cleared.

    Read in the turn's own transaction: what the model is shown once is gone.
    """
    rows = await c.fetch(
        "select user_id, user_name, text from group_lines where channel = ? and chat_id = ?"
        " and created_at >= ? order by id",
        channel,
        chat_id,
        since,
    )
    await c.execute("delete from group_lines where channel = ? and chat_id = ?", channel, chat_id)
    return [GroupLine.model_validate(r) for r in rows]


class ContextQueries(QueriesBase):
    """Keeping a group's unaddressed lines for its next question."""

    @transaction
    async def keep_group_line(
        self,
        c: Conn,
        channel: str,
        chat_id: str,
        line: GroupLine,
        *,
        tokens: int,
        now: float,
        max_lines: int,
        max_tokens: int,
        since: float,
    ) -> None:
        """Keep one line; the chat keeps at most `max_lines` lines and `max_tokens` tokens,
        none from before `since` (the oldest go first)."""
        await c.lock(f"context\0{channel}\0{chat_id}")
        await c.execute(
            "insert into group_lines (channel, chat_id, user_id, user_name, text, tokens,"
            " created_at) values (?, ?, ?, ?, ?, ?, ?)",
            channel,
            chat_id,
            line.user_id,
            line.user_name,
            line.text,
            tokens,
            now,
        )
        rows = await c.fetch(
            "select id, tokens, created_at from group_lines where channel = ? and chat_id = ?"
            " order by id desc",
            channel,
            chat_id,
        )
        used, drop = 0, []
        for n, r in enumerate(rows):
            used += int(r["tokens"])
            if n >= max_lines or used > max_tokens or float(r["created_at"]) < since:
                drop.append(int(r["id"]))
        if drop:
            await c.execute(f"delete from group_lines where id in ({marks(drop)})", *drop)
