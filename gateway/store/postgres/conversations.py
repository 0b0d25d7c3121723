"""Sessions, messages, traces and feedback on PostgreSQL."""

from __future__ import annotations

import json
import time
import zlib
from collections.abc import Sequence
from typing import Any

import asyncpg

from gateway.core.models import MessageKind, Role
from gateway.core.records import (
    FeedbackRecord,
    MessageRecord,
    OpenedTurn,
    SessionRecord,
    Trace,
)
from gateway.store.base import decode_json_fields
from gateway.store.conversations import _TRACE_LISTS, _message
from gateway.store.postgres.base import PgQueriesBase

_TRACE_COLUMNS = ("message_id", *Trace.model_fields)
_INSERT_TRACE = (
    f"insert into traces ({', '.join(_TRACE_COLUMNS)})"
    f" values ({', '.join(f'${i}' for i in range(1, len(_TRACE_COLUMNS) + 1))})"
)

_MESSAGE_FOR_INBOX = (
    "select * from messages where inbox_id = $1 and role = $2 order by id desc limit 1"
)
_HISTORY = (
    "select * from messages where session_id = $1 and kind <> all($2::text[])"
    " order by id desc limit $3"
)
_CHAT_LOCK = 0x5E55
"""First key of the per-chat advisory locks (the two-key space, apart from the migration lock)."""


def _limit(limit: int) -> int | None:
    """SQLite reads a negative LIMIT as no limit; PostgreSQL refuses one."""
    return None if limit < 0 else int(limit)


class PgConversationQueries(PgQueriesBase):
    """What the agent and the channels remember about conversations."""

    async def current_session(
        self, channel: str, chat_id: str, user_id: str | None, now: float, idle_seconds: float
    ) -> SessionRecord:
        """The chat's open session; one idle past `idle_seconds` is finished, a new one opened."""
        async with self._tx() as conn:
            await _lock_chat(conn, channel, chat_id)
            return await _current_session(conn, channel, chat_id, user_id, now, idle_seconds)

    async def open_turn(
        self,
        channel: str,
        chat_id: str,
        user_id: str | None,
        text: str,
        *,
        inbox_id: int | None,
        now: float,
        idle_seconds: float,
        history_limit: int,
        exclude_kinds: Sequence[MessageKind] = (),
    ) -> OpenedTurn:
        """Start a turn in one transaction: session, the user's message (once), history.

        When the inbox update was answered before (a crash between answer and delivery),
        that answer comes back instead and nothing is written.
        """
        async with self._tx() as conn:
            await _lock_chat(conn, channel, chat_id)
            if inbox_id is not None:
                done = await _message_for_inbox(conn, inbox_id, "assistant")
                if done is not None:
                    return OpenedTurn(session_id=done.session_id, answer=done)
            stored = None if inbox_id is None else await _message_for_inbox(conn, inbox_id, "user")
            if stored is not None:
                # Resumed after a crash: the turn stays in the session of its question,
                # even if that session went idle meanwhile.
                session_id = stored.session_id
            else:
                session = await _current_session(conn, channel, chat_id, user_id, now, idle_seconds)
                session_id = session.id
                await _add_message(conn, session_id, "user", text, "normal", inbox_id, None, now)
            history = await _history(conn, session_id, history_limit, exclude_kinds)
        return OpenedTurn(session_id=session_id, history=history)

    async def finish_chat_session(
        self, channel: str, chat_id: str, reason: str = "new", now: float | None = None
    ) -> bool:
        """Finish the chat's open session (for /new); False when none was open."""
        at = time.time() if now is None else now
        changed = await self._execute(
            "update sessions set finished_at = $1, finish_reason = $2"
            " where channel = $3 and chat_id = $4 and finished_at is null",
            at,
            reason,
            channel,
            chat_id,
        )
        return changed > 0

    async def finish_idle_sessions(self, now: float, idle_seconds: float) -> int:
        """Finish every open session idle longer than `idle_seconds`."""
        return await self._execute(
            "update sessions set finished_at = $1, finish_reason = 'idle'"
            " where finished_at is null and last_activity_at < $2",
            now,
            now - idle_seconds,
        )

    async def get_session(self, session_id: int) -> SessionRecord | None:
        """One session by id."""
        row = await self._fetchrow("select * from sessions where id = $1", session_id)
        return None if row is None else SessionRecord.model_validate(row)

    async def add_message(
        self,
        session_id: int,
        role: Role,
        text: str,
        *,
        kind: MessageKind = "normal",
        inbox_id: int | None = None,
        trace: Trace | None = None,
        now: float | None = None,
    ) -> MessageRecord:
        """Store a message (and, for an answer, its trace) in one transaction."""
        at = time.time() if now is None else now
        async with self._tx() as conn:
            return await _add_message(conn, session_id, role, text, kind, inbox_id, trace, at)

    async def history(
        self, session_id: int, *, limit: int, exclude_kinds: Sequence[MessageKind] = ()
    ) -> list[MessageRecord]:
        """The session's last `limit` messages, oldest first, without the excluded kinds."""
        rows = await self._fetch(_HISTORY, session_id, list(exclude_kinds), _limit(limit))
        return [_message(r) for r in rows][::-1]

    async def get_message(self, message_id: int) -> MessageRecord | None:
        """One message by id."""
        row = await self._fetchrow("select * from messages where id = $1", message_id)
        return None if row is None else _message(row)

    async def answer_for_inbox(self, inbox_id: int) -> MessageRecord | None:
        """The answer already made for an inbox update, if a crash interrupted its delivery."""
        return await self.message_for_inbox(inbox_id, "assistant")

    async def message_for_inbox(self, inbox_id: int, role: Role) -> MessageRecord | None:
        """The message of `role` already stored for an inbox update, if any."""
        row = await self._fetchrow(_MESSAGE_FOR_INBOX, inbox_id, role)
        return None if row is None else _message(row)

    async def set_platform_ids(self, message_id: int, ids: Sequence[str]) -> None:
        """Remember the platform's ids of the messages that carried this one."""
        await self._execute(
            "update messages set platform_message_ids = $1 where id = $2",
            json.dumps(list(ids)),
            message_id,
        )

    async def get_trace(self, message_id: int) -> Trace | None:
        """The trace of one answer."""
        row = await self._fetchrow("select * from traces where message_id = $1", message_id)
        if row is None:
            return None
        row.pop("message_id")
        return Trace.model_validate(decode_json_fields(row, *_TRACE_LISTS))

    async def set_feedback(
        self, message_id: int, user_id: str, rating: int, now: float | None = None
    ) -> FeedbackRecord | None:
        """Record or change a user's rating of an answer; None when no such answer exists."""
        at = time.time() if now is None else now
        # One statement: the answer's chat is read and the rating written atomically.
        row = await self._fetchrow(
            "insert into feedback"
            " (message_id, channel, chat_id, user_id, rating, created_at, updated_at)"
            " select m.id, s.channel, s.chat_id, $2, $3, $4, $4"
            " from messages m join sessions s on s.id = m.session_id"
            " where m.id = $1 and m.role = 'assistant'"
            " on conflict (message_id, user_id)"
            " do update set rating = excluded.rating, updated_at = excluded.updated_at"
            " returning *",
            message_id,
            user_id,
            rating,
            at,
        )
        return None if row is None else FeedbackRecord.model_validate(row)

    async def set_feedback_comment(
        self, message_id: int, user_id: str, comment: str, now: float | None = None
    ) -> bool:
        """Attach a comment to an existing rating; False when there is no rating."""
        at = time.time() if now is None else now
        changed = await self._execute(
            "update feedback set comment = $1, updated_at = $2"
            " where message_id = $3 and user_id = $4",
            comment,
            at,
            message_id,
            user_id,
        )
        return changed > 0

    async def list_feedback(self, *, limit: int = 100, offset: int = 0) -> list[FeedbackRecord]:
        """Feedback, newest first."""
        rows = await self._fetch(
            "select * from feedback order by updated_at desc, id desc limit $1 offset $2",
            _limit(limit),
            max(int(offset), 0),
        )
        return [FeedbackRecord.model_validate(r) for r in rows]


async def _lock_chat(conn: asyncpg.Connection, channel: str, chat_id: str) -> None:
    """Hold the chat's lock until the transaction ends: one session opens per chat at a time."""
    key = zlib.crc32(f"{channel}\0{chat_id}".encode())
    signed = key if key < 1 << 31 else key - (1 << 32)  # the lock takes an int4
    await conn.execute("select pg_advisory_xact_lock($1, $2)", _CHAT_LOCK, signed)


async def _current_session(
    conn: asyncpg.Connection,
    channel: str,
    chat_id: str,
    user_id: str | None,
    now: float,
    idle: float,
) -> SessionRecord:
    found = await conn.fetchrow(
        "select * from sessions where channel = $1 and chat_id = $2"
        " and finished_at is null order by id desc limit 1 for update",
        channel,
        chat_id,
    )
    if found is not None and now - found["last_activity_at"] <= idle:
        row = await conn.fetchrow(
            "update sessions set last_activity_at = $1 where id = $2 returning *",
            now,
            found["id"],
        )
        return SessionRecord.model_validate(dict(row))
    if found is not None:
        await conn.execute(
            "update sessions set finished_at = $1, finish_reason = 'idle' where id = $2",
            now,
            found["id"],
        )
    row = await conn.fetchrow(
        "insert into sessions (channel, chat_id, user_id, started_at, last_activity_at)"
        " values ($1, $2, $3, $4, $4) returning *",
        channel,
        chat_id,
        user_id,
        now,
    )
    return SessionRecord.model_validate(dict(row))


async def _add_message(
    conn: asyncpg.Connection,
    session_id: int,
    role: Role,
    text: str,
    kind: MessageKind,
    inbox_id: int | None,
    trace: Trace | None,
    at: float,
) -> MessageRecord:
    row = await conn.fetchrow(
        "insert into messages (session_id, role, text, kind, inbox_id, created_at)"
        " values ($1, $2, $3, $4, $5, $6) returning *",
        session_id,
        role,
        text,
        kind,
        inbox_id,
        at,
    )
    message = _message(dict(row))
    if trace is not None:
        values: dict[str, Any] = {"message_id": message.id, **trace.model_dump()}
        for key in _TRACE_LISTS:
            values[key] = json.dumps(values[key])
        values["completed"] = int(values["completed"])
        await conn.execute(_INSERT_TRACE, *(values[c] for c in _TRACE_COLUMNS))
    return message


async def _history(
    conn: asyncpg.Connection, session_id: int, limit: int, exclude_kinds: Sequence[MessageKind]
) -> list[MessageRecord]:
    rows = await conn.fetch(_HISTORY, session_id, list(exclude_kinds), _limit(limit))
    return [_message(dict(r)) for r in rows][::-1]


async def _message_for_inbox(
    conn: asyncpg.Connection, inbox_id: int, role: Role
) -> MessageRecord | None:
    row = await conn.fetchrow(_MESSAGE_FOR_INBOX, inbox_id, role)
    return None if row is None else _message(dict(row))
