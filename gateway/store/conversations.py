"""Sessions, messages, traces and feedback."""

from __future__ import annotations

import time
from collections.abc import Sequence

from gateway.core.models import Role
from gateway.core.records import (
    FeedbackRecord,
    MessageRecord,
    SessionRecord,
    Trace,
)
from gateway.store.messages import (
    MESSAGE_COLUMNS,
    TRACE_LISTS,
    inbox_message,
    message_record,
    set_platform_ids,
)
from gateway.store.sql import (
    Conn,
    QueriesBase,
    decode_json_fields,
    marks,
    query,
    transaction,
)

MAX_NAME = 64
_CONTINUE_SESSION = (
    "update sessions set last_activity_at = case when last_activity_at < ? then last_activity_at"
    " else cast(? as double precision) end"
    " where id = (select max(id) from sessions"
    " where channel = ? and chat_id = ? and finished_at is null)"
    " and finished_at is null returning *"
)
"""The chat's open session, its activity moved to `now` unless it was idle since before `since`
(only that column is set: the indexes of `finished_at` stay untouched); marks: since, now,
channel, chat."""


class ConversationQueries(QueriesBase):
    """What the agent and the channels remember about conversations."""

    @query
    async def finish_chat_session(
        self, c: Conn, channel: str, chat_id: str, reason: str = "new", now: float | None = None
    ) -> bool:
        """Finish the chat's open session (for /new); False when none was open."""
        at = time.time() if now is None else now
        changed = await c.execute(
            "update sessions set finished_at = ?, finish_reason = ?"
            " where channel = ? and chat_id = ? and finished_at is null",
            at,
            reason,
            channel,
            chat_id,
        )
        return changed > 0

    @query
    async def finish_idle_sessions(self, c: Conn, now: float, idle_seconds: float) -> int:
        """Finish every open session idle longer than `idle_seconds`."""
        return await c.execute(
            "update sessions set finished_at = ?, finish_reason = 'idle'"
            " where finished_at is null and last_activity_at < ?",
            now,
            now - idle_seconds,
        )

    @query
    async def open_session_count(self, c: Conn) -> int:
        """Sessions not finished yet, which synthesis does not read."""
        return int(await c.fetchval("select count(*) from sessions where finished_at is null"))

    @query
    async def get_session(self, c: Conn, session_id: int) -> SessionRecord | None:
        """One session by id."""
        row = await c.fetchrow("select * from sessions where id = ?", session_id)
        return None if row is None else SessionRecord.model_validate(row)

    @transaction
    async def unsend_message(
        self, c: Conn, channel: str, chat_id: str, platform_id: str, now: float | None = None
    ) -> bool:
        """Mark a user's message unsent, and the answer given to it; its text is forgotten.

        A comment given in that message is forgotten too. False when nothing of that chat
        came in a message with that platform id.
        """
        at = time.time() if now is None else now
        comments = await c.execute(
            "update feedback set comment = null, comment_message_id = null, updated_at = ?"
            " where comment_message_id = ? and channel = ? and chat_id = ?",
            at,
            platform_id,
            channel,
            chat_id,
        )
        row = await c.fetchrow(
            "select m.id, m.inbox_id from messages m join sessions s on s.id = m.session_id"
            " where m.platform_message_id = ? and m.role = 'user'"
            " and s.channel = ? and s.chat_id = ? order by m.id desc limit 1",
            platform_id,
            channel,
            chat_id,
        )
        if row is None:
            return comments > 0
        await c.execute("update messages set unsent_at = ?, text = '' where id = ?", at, row["id"])
        await c.execute(
            "update attachments set content = null, name = null where message_id = ?", row["id"]
        )
        if row["inbox_id"] is not None:
            await c.execute(
                "update messages set unsent_at = ? where inbox_id = ? and role = 'assistant'",
                at,
                row["inbox_id"],
            )
        return True

    @query
    async def set_attachments_sent(
        self, c: Conn, message_id: int, kind: str, sent_as: str, note: str | None
    ) -> None:
        """Record what the model got of a message's attachments of `kind` after all."""
        await c.execute(
            "update attachments set sent_as = ?, note = ? where message_id = ? and kind = ?",
            sent_as,
            note,
            message_id,
            kind,
        )

    @query
    async def get_message(self, c: Conn, message_id: int) -> MessageRecord | None:
        """One message by id."""
        row = await c.fetchrow("select * from messages where id = ?", message_id)
        return None if row is None else message_record(row)

    @query
    async def message_for_inbox(self, c: Conn, inbox_id: int, role: Role) -> MessageRecord | None:
        """The message of `role` already stored for an inbox update, if any."""
        return await inbox_message(c, inbox_id, role)

    @query
    async def set_platform_ids(self, c: Conn, message_id: int, ids: Sequence[str]) -> None:
        """Remember the platform's ids of the messages that carried this one."""
        await set_platform_ids(c, message_id, ids)

    @query
    async def get_trace(self, c: Conn, message_id: int) -> Trace | None:
        """The trace of one answer."""
        row = await c.fetchrow("select * from traces where message_id = ?", message_id)
        if row is None:
            return None
        row.pop("message_id")
        return Trace.model_validate(decode_json_fields(row, *TRACE_LISTS))

    @query
    async def set_feedback(
        self, c: Conn, message_id: int, user_id: str, rating: int, now: float | None = None
    ) -> FeedbackRecord | None:
        """Record or change a user's rating of an answer; None when no such answer exists."""
        return await store_rating(
            c, message_id, user_id, rating, time.time() if now is None else now
        )

    @query
    async def set_feedback_comment(
        self,
        c: Conn,
        message_id: int,
        user_id: str,
        comment: str,
        now: float | None = None,
        *,
        platform_message_id: str | None = None,
    ) -> bool:
        """Attach a comment (and the platform's id of the message it came in) to a rating.

        False when there is no rating.
        """
        at = time.time() if now is None else now
        changed = await c.execute(
            "update feedback set comment = ?, comment_message_id = ?, updated_at = ?"
            " where message_id = ? and user_id = ?",
            comment,
            platform_message_id,
            at,
            message_id,
            user_id,
        )
        return changed > 0

    @query
    async def list_feedback(
        self, c: Conn, *, limit: int = 100, offset: int = 0
    ) -> list[FeedbackRecord]:
        """Feedback, newest first."""
        rows = await c.fetch(
            "select * from feedback order by updated_at desc, id desc limit ? offset ?",
            c.dialect.limit(limit),
            max(int(offset), 0),
        )
        return [FeedbackRecord.model_validate(r) for r in rows]


async def store_rating(
    c: Conn, message_id: int, user_id: str, rating: int, at: float
) -> FeedbackRecord | None:
    """Record or change a user's rating of an answer (kept with any comment given before)."""
    # One statement: the answer's chat is read and the rating written atomically.
    row = await c.fetchrow(
        "insert into feedback"
        " (message_id, channel, chat_id, user_id, rating, created_at, updated_at)"
        " select m.id, s.channel, s.chat_id, ?, ?, ?, ?"
        " from messages m join sessions s on s.id = m.session_id"
        " where m.id = ? and m.role = 'assistant'"
        " on conflict (message_id, user_id)"
        " do update set rating = excluded.rating, updated_at = excluded.updated_at"
        " returning *",
        user_id,
        rating,
        at,
        at,
        message_id,
    )
    return None if row is None else FeedbackRecord.model_validate(row)


def chat_lock_key(channel: str, chat_id: str) -> str:
    """The name of the lock that queues replicas opening the same chat's session."""
    return f"chat\0{channel}\0{chat_id}"


async def lock_chat(c: Conn, channel: str, chat_id: str) -> None:
    """Queue replicas opening the same chat's session, until the transaction ends."""
    await c.lock(chat_lock_key(channel, chat_id))


async def open_session(
    c: Conn, channel: str, chat_id: str, user_id: str | None, now: float, idle: float
) -> tuple[SessionRecord, bool]:
    """The chat's open session, continued, or a new one; and whether it is new (empty)."""
    # Called inside a transaction that holds the chat's lock. One statement continues the
    # chat's open session; its row lock (and the re-check of `finished_at` on PostgreSQL)
    # keeps a concurrent /new from finishing it underneath.
    since = now - idle
    found = await c.fetchrow(_CONTINUE_SESSION, since, now, channel, chat_id)
    if found is not None and found["last_activity_at"] >= since:
        return SessionRecord.model_validate(found), False
    if found is not None:  # idle: finished, and a new one opened
        await c.execute(
            "update sessions set finished_at = ?, finish_reason = 'idle' where id = ?",
            now,
            found["id"],
        )
    row = await c.fetchrow(
        "insert into sessions (channel, chat_id, user_id, started_at, last_activity_at)"
        " values (?, ?, ?, ?, ?) returning *",
        channel,
        chat_id,
        user_id,
        now,
        now,
    )
    return SessionRecord.model_validate(row), True


_NAME_UPDATE = (
    " on conflict (channel, user_id) do update set name = excluded.name,"
    " updated_at = excluded.updated_at"
)
REMEMBER_NAME = (
    "insert into user_names (channel, user_id, name, updated_at) values (?, ?, ?, ?)" + _NAME_UPDATE
)
"""The user's display name as the platform sent it this time; marks: `name_args`."""
NAME_UNLESS_ASKED = (
    "insert into user_names (channel, user_id, name, updated_at) select ?, ?, ?, ?"
    " where not exists (select 1 from awaiting a where a.channel = ? and a.chat_id = ?"
    " and a.user_id = ? and a.expires_at >= ?)" + _NAME_UPDATE
)
"""`REMEMBER_NAME` as a `with` item of the statement that reads the chat's state (where the
database's `with` may insert): written only where the turn opens, not where the message may
answer the user's open question; marks: `name_args`, then the channel, the chat, the user
and the time the question must still be open at."""


def name_args(channel: str, user_id: str, name: str, at: float) -> list[object]:
    """The values of `REMEMBER_NAME`'s marks (the name bounded)."""
    return [channel, user_id, name.strip()[:MAX_NAME], at]


_SESSION_AND_MESSAGE = f"""
with s as (
    update sessions set
        last_activity_at = case when last_activity_at < ? then last_activity_at
            else cast(? as double precision) end,
        finished_at = case when last_activity_at < ? then cast(? as double precision)
            else finished_at end,
        finish_reason = case when last_activity_at < ? then 'idle' else finish_reason end
    where id = (select max(id) from sessions
        where channel = ? and chat_id = ? and finished_at is null)
    and finished_at is null
    returning id, finished_at is null as kept
), n as (
    insert into sessions (channel, chat_id, user_id, started_at, last_activity_at)
    select ?, ?, ?, ?, ? where not exists (select 1 from s where kept)
    returning id
), m as (
    insert into messages ({", ".join(MESSAGE_COLUMNS)})
    select coalesce((select id from s where kept), (select id from n)), {marks(MESSAGE_COLUMNS[1:])}
    returning id, session_id
)
select m.id, m.session_id, exists (select 1 from n) as new from m
"""
"""`open_session` and the message's insert in one statement (a database whose `with` may
insert): the chat's open session continued, or finished if idle and a new one opened (its
one row updated once: the activity or the finish), and the message in whichever it is."""


async def open_session_with_message(
    c: Conn,
    channel: str,
    chat_id: str,
    user_id: str | None,
    now: float,
    idle: float,
    message: Sequence[object],
) -> tuple[int, int, bool]:
    """As `open_session` then the insert of `message` (its `MESSAGE_COLUMNS` values after
    the session's id), in one statement: the message's id, its session's, whether the
    session is new. Called where `open_session` is: in a transaction holding the chat's lock."""
    since = now - idle
    row = await c.fetchrow(
        _SESSION_AND_MESSAGE,
        *(since, now, since, now, since, channel, chat_id),
        *(channel, chat_id, user_id, now, now),
        *message,
    )
    assert row is not None  # one message is always inserted
    return int(row["id"]), int(row["session_id"]), bool(row["new"])


async def remember_name(c: Conn, channel: str, user_id: str, name: str, at: float) -> None:
    """The user's display name as the platform sent it this time (bounded)."""
    await c.execute(REMEMBER_NAME, *name_args(channel, user_id, name, at))
