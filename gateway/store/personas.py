"""Per-chat personas: the text a chat's admins set with /persona (or the console)."""

from __future__ import annotations

from gateway.store.sql import Conn, QueriesBase, query

PERSONA_COLUMN = "(select text from chat_personas where channel = ? and chat_id = ?) as persona"
"""The chat's persona as a select item; the marks take the channel and the chat."""


async def chat_persona(c: Conn, channel: str, chat_id: str) -> str | None:
    """The chat's persona, read in the turn's own transaction."""
    value = await c.fetchval(f"select {PERSONA_COLUMN}", channel, chat_id)
    return None if value is None else str(value)


class PersonaQueries(QueriesBase):
    """Setting, showing and clearing a chat's persona."""

    @query
    async def get_chat_persona(self, c: Conn, channel: str, chat_id: str) -> str | None:
        return await chat_persona(c, channel, chat_id)

    @query
    async def set_chat_persona(
        self, c: Conn, channel: str, chat_id: str, text: str | None, by: str | None, now: float
    ) -> None:
        """Keep the chat's persona; None clears it."""
        if text is None:
            await c.execute(
                "delete from chat_personas where channel = ? and chat_id = ?", channel, chat_id
            )
            return
        await c.execute(
            "insert into chat_personas (channel, chat_id, text, set_by, set_at)"
            " values (?, ?, ?, ?, ?) on conflict (channel, chat_id) do update set"
            " text = excluded.text, set_by = excluded.set_by, set_at = excluded.set_at",
            channel,
            chat_id,
            text,
            by,
            now,
        )

    @query
    async def chat_personas(self, c: Conn) -> list[dict[str, object]]:
        """Every chat's persona, newest first (the console)."""
        return await c.fetch(
            "select channel, chat_id, text, set_by, set_at from chat_personas order by set_at desc"
        )
