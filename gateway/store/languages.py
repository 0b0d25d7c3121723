"""Languages: the one a chat chose with /language, and each user's as their platform says it."""

from __future__ import annotations

import time
from typing import Any

from gateway.core.records import LanguageState
from gateway.store.sql import Conn, QueriesBase, query


class LanguageQueries(QueriesBase):
    """The chat's choice and the user's platform language, read together in one query."""

    @query
    async def language_state(
        self, c: Conn, channel: str, chat_id: str, user_id: str | None
    ) -> LanguageState:
        return await read_language_state(c, channel, chat_id, user_id)

    @query
    async def choose_language(
        self,
        c: Conn,
        channel: str,
        chat_id: str,
        language: str | None,
        by: str | None = None,
        now: float | None = None,
    ) -> None:
        """Keep the chat's choice; None forgets it (the user's own language applies again)."""
        if language is None:
            await c.execute(
                "delete from chat_languages where channel = ? and chat_id = ?", channel, chat_id
            )
            return
        await c.execute(
            "insert into chat_languages (channel, chat_id, language, set_by, set_at)"
            " values (?, ?, ?, ?, ?) on conflict (channel, chat_id) do update set"
            " language = excluded.language, set_by = excluded.set_by, set_at = excluded.set_at",
            channel,
            chat_id,
            language,
            by,
            time.time() if now is None else now,
        )

    @query
    async def choose_voice(
        self, c: Conn, channel: str, user_id: str, mode: str | None, now: float | None = None
    ) -> None:
        """Keep the user's /voice choice ("on", "off", "auto"); None forgets it (the default)."""
        if mode is None:
            await c.execute(
                "delete from user_voices where channel = ? and user_id = ?", channel, user_id
            )
            return
        await c.execute(
            "insert into user_voices (channel, user_id, mode, set_at) values (?, ?, ?, ?)"
            " on conflict (channel, user_id) do update set"
            " mode = excluded.mode, set_at = excluded.set_at",
            channel,
            user_id,
            mode,
            time.time() if now is None else now,
        )

    @query
    async def user_language_seen(
        self,
        c: Conn,
        channel: str,
        user_id: str,
        tag: str | None,
        *,
        ok: bool,
        now: float | None = None,
    ) -> None:
        """Remember the user's language tag as looked up now (a failed lookup keeps the old)."""
        at = time.time() if now is None else now
        if ok:
            update = "tag = excluded.tag, ok = excluded.ok, checked_at = excluded.checked_at"
        else:
            update = "ok = excluded.ok, checked_at = excluded.checked_at"
        await c.execute(
            "insert into user_languages (channel, user_id, tag, ok, checked_at)"
            f" values (?, ?, ?, ?, ?) on conflict (channel, user_id) do update set {update}",
            channel,
            user_id,
            tag,
            int(ok),
            at,
        )


LANGUAGE_COLUMNS = (
    "(select language from chat_languages where channel = ? and chat_id = ?) as chosen,"
    " u.tag, u.ok, u.checked_at,"
    " (select mode from user_voices where channel = ? and user_id = ?) as voice"
)
"""The select items of a chat's language state and the user's /voice; their marks take the
channel and the chat, then the channel and the user (`language_args`)."""


def language_args(channel: str, chat_id: str, user_id: str | None) -> list[object]:
    """The values of `LANGUAGE_COLUMNS`' marks."""
    return [channel, chat_id, channel, user_id or ""]


LANGUAGE_JOIN = "left join user_languages u on u.channel = ? and u.user_id = ?"
"""Its from-clause item after `(select 1 as one) as x`; the marks take the channel and user."""


def language_in(row: dict[str, Any]) -> LanguageState:
    """The language state in a row selected with `LANGUAGE_COLUMNS` (a row of the language
    columns alone, as a card copy's, has no /voice choice)."""
    return LanguageState(
        chosen=row["chosen"],
        tag=row["tag"],
        ok=bool(row["ok"]),
        checked_at=row["checked_at"],
        voice=row.get("voice"),  # read where the user's choice matters (a turn, a press)
    )


async def read_language_state(
    c: Conn, channel: str, chat_id: str, user_id: str | None
) -> LanguageState:
    """The chat's choice and the user's platform language, in one statement."""
    row = await c.fetchrow(
        f"select {LANGUAGE_COLUMNS} from (select 1 as one) as x {LANGUAGE_JOIN}",
        *language_args(channel, chat_id, user_id),
        channel,
        user_id or "",
    )
    if row is None:  # pragma: no cover - the select always gives one row
        return LanguageState()
    return language_in(row)
