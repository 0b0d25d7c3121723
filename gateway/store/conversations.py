"""Sessions, messages, traces and feedback."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from gateway.core.models import AttachmentRecord, MessageKind, Role
from gateway.core.records import (
    FeedbackRecord,
    MessageRecord,
    SessionRecord,
    Trace,
)
from gateway.store.sql import (
    Conn,
    QueriesBase,
    decode_json_fields,
    insert_sql,
    marks,
    query,
    transaction,
)

MAX_NAME = 64
TRACE_LISTS = (
    "skills_offered",
    "skills_loaded",
    "skills_withheld",
    "skills_unavailable",
    "tools_used",
    "tool_calls",
    "notes",
)
_TRACE_COLUMNS = ("message_id", *Trace.model_fields)
_INSERT_TRACE = insert_sql("traces", _TRACE_COLUMNS)
_ATTACHMENT_COLUMNS = tuple(f for f in AttachmentRecord.model_fields if f != "id")
_INSERT_ATTACHMENT = insert_sql("attachments", (*_ATTACHMENT_COLUMNS, "created_at"))
_MESSAGE_COLUMNS = (
    "session_id",
    "role",
    "text",
    "kind",
    "inbox_id",
    "created_at",
    "platform_message_id",
    "user_id",
)
_INSERT_MESSAGE = insert_sql("messages", _MESSAGE_COLUMNS)
_THEN_TRACE = (
    f"insert into traces ({', '.join(_TRACE_COLUMNS)})"
    f" select m.id, {marks(_TRACE_COLUMNS[1:])} from m returning message_id"
)
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


def message_record(row: dict[str, Any]) -> MessageRecord:
    """A messages row as a record."""
    return MessageRecord.model_validate(decode_json_fields(row, "platform_message_ids"))


class ConversationQueries(QueriesBase):
    """What the agent and the channels remember about conversations."""

    @transaction
    async def current_session(
        self,
        c: Conn,
        channel: str,
        chat_id: str,
        user_id: str | None,
        now: float,
        idle_seconds: float,
    ) -> SessionRecord:
        """The chat's open session; one idle past `idle_seconds` is finished, a new one opened."""
        await lock_chat(c, channel, chat_id)
        return await session_for_turn(c, channel, chat_id, user_id, now, idle_seconds)

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
    async def add_message(
        self,
        c: Conn,
        session_id: int,
        role: Role,
        text: str,
        *,
        kind: MessageKind = "normal",
        inbox_id: int | None = None,
        trace: Trace | None = None,
        now: float | None = None,
        user_id: str | None = None,
    ) -> MessageRecord:
        """Store a message (and, for an answer, its trace) in one transaction.

        `user_id`: the sender of a question, or the user an answer is for.
        """
        at = time.time() if now is None else now
        return await insert_message(
            c, session_id, role, text, kind, inbox_id, trace, at, user_id=user_id
        )

    @query
    async def history(
        self,
        c: Conn,
        session_id: int,
        *,
        limit: int,
        exclude_kinds: Sequence[MessageKind] = (),
    ) -> list[MessageRecord]:
        """The session's last `limit` messages, oldest first, without the excluded kinds."""
        return await read_history(c, session_id, limit, exclude_kinds)

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
    async def attachments_of(
        self, c: Conn, message_ids: Sequence[int]
    ) -> dict[int, list[AttachmentRecord]]:
        """The attachments of each message, in order."""
        return await attachments_by_message(c, message_ids)

    @query
    async def get_message(self, c: Conn, message_id: int) -> MessageRecord | None:
        """One message by id."""
        row = await c.fetchrow("select * from messages where id = ?", message_id)
        return None if row is None else message_record(row)

    async def answer_for_inbox(self, inbox_id: int) -> MessageRecord | None:
        """The answer already made for an inbox update, if a crash interrupted its delivery."""
        return await self.message_for_inbox(inbox_id, "assistant")

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
        at = time.time() if now is None else now
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


def chat_lock_key(channel: str, chat_id: str) -> str:
    """The name of the lock that queues replicas opening the same chat's session."""
    return f"chat\0{channel}\0{chat_id}"


async def lock_chat(c: Conn, channel: str, chat_id: str) -> None:
    """Queue replicas opening the same chat's session, until the transaction ends."""
    await c.lock(chat_lock_key(channel, chat_id))


async def session_for_turn(
    c: Conn, channel: str, chat_id: str, user_id: str | None, now: float, idle: float
) -> SessionRecord:
    return (await open_session(c, channel, chat_id, user_id, now, idle))[0]


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


async def insert_message(
    c: Conn,
    session_id: int,
    role: Role,
    text: str,
    kind: MessageKind,
    inbox_id: int | None,
    trace: Trace | None,
    at: float,
    *,
    platform_message_id: str | None = None,
    user_id: str | None = None,
) -> MessageRecord:
    args = (session_id, role, text, kind, inbox_id, at, platform_message_id, user_id)
    if trace is None:
        message_id = await c.fetchval(f"{_INSERT_MESSAGE} returning id", *args)
    elif c.dialect.writable_cte:  # the answer and its trace in one statement
        message_id = await c.fetchval(
            f"with m as ({_INSERT_MESSAGE} returning id) {_THEN_TRACE}", *args, *trace_args(trace)
        )
    else:  # in the unit's transaction, which is all of it here
        message_id = await c.fetchval(f"{_INSERT_MESSAGE} returning id", *args)
        await c.execute(_INSERT_TRACE, message_id, *trace_args(trace))
    # Built from what was written: the row read back and decoded would be the same.
    return MessageRecord(
        id=message_id,
        session_id=session_id,
        role=role,
        text=text,
        kind=kind,
        inbox_id=inbox_id,
        created_at=at,
        platform_message_id=platform_message_id,
        user_id=user_id,
    )


def trace_args(trace: Trace) -> list[Any]:
    """A trace's column values after `message_id`, as `traces` keeps them (lists as JSON)."""
    values: list[Any] = []
    for name in _TRACE_COLUMNS[1:]:
        value = getattr(trace, name)
        if name in TRACE_LISTS:
            items = [v.model_dump() if isinstance(v, BaseModel) else v for v in value]
            value = json.dumps(items) if items else "[]"
        elif isinstance(value, bool):
            value = int(value)
        values.append(value)
    return values


async def remember_name(c: Conn, channel: str, user_id: str, name: str, at: float) -> None:
    """The user's display name as the platform sent it this time (bounded)."""
    await c.execute(
        "insert into user_names (channel, user_id, name, updated_at) values (?, ?, ?, ?)"
        " on conflict (channel, user_id) do update set name = excluded.name,"
        " updated_at = excluded.updated_at",
        channel,
        user_id,
        name.strip()[:MAX_NAME],
        at,
    )


async def read_history(
    c: Conn, session_id: int, limit: int, exclude_kinds: Sequence[MessageKind]
) -> list[MessageRecord]:
    kinds = list(exclude_kinds)
    rows = await c.fetch(
        "select * from messages where session_id = ? and unsent_at is null"
        + (f" and kind not in ({marks(kinds)})" if kinds else "")
        + " order by id desc limit ?",
        session_id,
        *kinds,
        c.dialect.limit(limit),
    )
    messages = [message_record(r) for r in rows][::-1]
    carrying = [r["id"] for r in rows if r["attachment_count"]]
    if carrying:  # a history of text alone costs no second query
        found = await attachments_by_message(c, carrying)
        for message in messages:
            message.attachments = found.get(message.id, [])
    return messages


async def attachments_by_message(
    c: Conn, message_ids: Sequence[int]
) -> dict[int, list[AttachmentRecord]]:
    """The attachments of each of `message_ids` that has any, in order."""
    ids = list(dict.fromkeys(message_ids))
    found: dict[int, list[AttachmentRecord]] = {}
    if not ids:
        return found
    rows = await c.fetch(
        f"select * from attachments where message_id in ({marks(ids)}) order by id", *ids
    )
    for row in rows:
        row.pop("created_at", None)
        found.setdefault(row["message_id"], []).append(AttachmentRecord.model_validate(row))
    return found


async def with_attachments(c: Conn, messages: list[MessageRecord]) -> list[MessageRecord]:
    """The messages with their attachments filled in (users' messages only carry any)."""
    found = await attachments_by_message(c, [m.id for m in messages if m.role == "user"])
    for message in messages:
        message.attachments = found.get(message.id, [])
    return messages


async def inbox_turn(c: Conn, inbox_id: int) -> tuple[MessageRecord | None, MessageRecord | None]:
    """The user's message and the answer already stored for an inbox update, in one statement
    (a turn resumed after a crash has one or both)."""
    rows = await c.fetch(
        "select * from messages where inbox_id = ? and role in ('user', 'assistant')"
        " order by id desc",
        inbox_id,
    )
    latest: dict[str, dict[str, Any]] = {}
    for row in rows:
        latest.setdefault(row["role"], row)
    user, answer = latest.get("user"), latest.get("assistant")
    return (
        None if user is None else message_record(user),
        None if answer is None else message_record(answer),
    )


async def inbox_message(c: Conn, inbox_id: int, role: Role) -> MessageRecord | None:
    row = await c.fetchrow(
        "select * from messages where inbox_id = ? and role = ? order by id desc limit 1",
        inbox_id,
        role,
    )
    return None if row is None else message_record(row)


async def store_attachments(
    c: Conn, message_id: int, attachments: Sequence[AttachmentRecord], now: float
) -> None:
    """Keep what a user's message carried, and how many, with the message."""
    for attachment in attachments:
        values = {**attachment.model_dump(), "message_id": message_id}
        await c.execute(_INSERT_ATTACHMENT, *(values[k] for k in _ATTACHMENT_COLUMNS), now)
    if attachments:
        await c.execute(
            "update messages set attachment_count = ? where id = ?", len(attachments), message_id
        )


async def set_platform_ids(c: Conn, message_id: int, ids: Sequence[str]) -> None:
    """The platform's ids of every message that carried this one so far."""
    await c.execute(
        "update messages set platform_message_ids = ? where id = ?",
        json.dumps(list(ids)),
        message_id,
    )
