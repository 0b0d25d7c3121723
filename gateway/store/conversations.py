"""Sessions, messages, traces and feedback."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from sqlite_utils import Database

from gateway.core.models import MessageKind, Role
from gateway.core.records import (
    FeedbackRecord,
    MessageRecord,
    OpenedTurn,
    SessionRecord,
    Trace,
)
from gateway.store.base import QueriesBase, decode_json_fields, one

_TRACE_LISTS = ("skills_offered", "skills_loaded", "skills_withheld", "tools_used")


def _message(row: dict[str, Any]) -> MessageRecord:
    return MessageRecord.model_validate(decode_json_fields(row, "platform_message_ids"))


class ConversationQueries(QueriesBase):
    """What the agent and the channels remember about conversations."""

    async def current_session(
        self, channel: str, chat_id: str, user_id: str | None, now: float, idle_seconds: float
    ) -> SessionRecord:
        """The chat's open session; one idle past `idle_seconds` is finished, a new one opened."""
        return await self.run(
            lambda db: _current_session(db, channel, chat_id, user_id, now, idle_seconds)
        )

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

        def begin(db: Database) -> OpenedTurn:
            with db.atomic():
                if inbox_id is not None:
                    done = _message_for_inbox(db, inbox_id, "assistant")
                    if done is not None:
                        return OpenedTurn(session_id=done.session_id, answer=done)
                stored = None if inbox_id is None else _message_for_inbox(db, inbox_id, "user")
                if stored is not None:
                    # Resumed after a crash: the turn stays in the session of its question,
                    # even if that session went idle meanwhile.
                    session_id = stored.session_id
                else:
                    session_id = _current_session(
                        db, channel, chat_id, user_id, now, idle_seconds
                    ).id
                    _add_message(db, session_id, "user", text, "normal", inbox_id, None, now)
                history = _history(db, session_id, history_limit, exclude_kinds)
            return OpenedTurn(session_id=session_id, history=history)

        return await self.run(begin)

    async def finish_chat_session(
        self, channel: str, chat_id: str, reason: str = "new", now: float | None = None
    ) -> bool:
        """Finish the chat's open session (for /new); False when none was open."""
        at = time.time() if now is None else now
        return await self.run(
            lambda db: (
                db.execute(
                    "update sessions set finished_at = ?, finish_reason = ?"
                    " where channel = ? and chat_id = ? and finished_at is null",
                    [at, reason, channel, chat_id],
                ).rowcount
                > 0
            )
        )

    async def finish_idle_sessions(self, now: float, idle_seconds: float) -> int:
        """Finish every open session idle longer than `idle_seconds`."""
        return await self.run(
            lambda db: (
                db.execute(
                    "update sessions set finished_at = ?, finish_reason = 'idle'"
                    " where finished_at is null and last_activity_at < ?",
                    [now, now - idle_seconds],
                ).rowcount
            )
        )

    async def get_session(self, session_id: int) -> SessionRecord | None:
        """One session by id."""
        row = await self.run(
            lambda db: one(db, "select * from sessions where id = ?", [session_id])
        )
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
        return await self.run(
            lambda db: _add_message(db, session_id, role, text, kind, inbox_id, trace, at)
        )

    async def history(
        self, session_id: int, *, limit: int, exclude_kinds: Sequence[MessageKind] = ()
    ) -> list[MessageRecord]:
        """The session's last `limit` messages, oldest first, without the excluded kinds."""
        return await self.run(lambda db: _history(db, session_id, limit, exclude_kinds))

    async def get_message(self, message_id: int) -> MessageRecord | None:
        """One message by id."""
        row = await self.run(
            lambda db: one(db, "select * from messages where id = ?", [message_id])
        )
        return None if row is None else _message(row)

    async def answer_for_inbox(self, inbox_id: int) -> MessageRecord | None:
        """The answer already made for an inbox update, if a crash interrupted its delivery."""
        return await self.message_for_inbox(inbox_id, "assistant")

    async def message_for_inbox(self, inbox_id: int, role: Role) -> MessageRecord | None:
        """The message of `role` already stored for an inbox update, if any."""
        return await self.run(lambda db: _message_for_inbox(db, inbox_id, role))

    async def set_platform_ids(self, message_id: int, ids: Sequence[str]) -> None:
        """Remember the platform's ids of the messages that carried this one."""
        await self.run(
            lambda db: db.execute(
                "update messages set platform_message_ids = ? where id = ?",
                [json.dumps(list(ids)), message_id],
            )
        )

    async def get_trace(self, message_id: int) -> Trace | None:
        """The trace of one answer."""
        row = await self.run(
            lambda db: one(db, "select * from traces where message_id = ?", [message_id])
        )
        if row is None:
            return None
        row.pop("message_id")
        return Trace.model_validate(decode_json_fields(row, *_TRACE_LISTS))

    async def set_feedback(
        self, message_id: int, user_id: str, rating: int, now: float | None = None
    ) -> FeedbackRecord | None:
        """Record or change a user's rating of an answer; None when no such answer exists."""
        at = time.time() if now is None else now

        def upsert(db: Database) -> FeedbackRecord | None:
            with db.atomic():
                msg = one(
                    db,
                    "select s.channel, s.chat_id from messages m join sessions s"
                    " on s.id = m.session_id where m.id = ? and m.role = 'assistant'",
                    [message_id],
                )
                if msg is None:
                    return None
                db.execute(
                    "insert into feedback"
                    " (message_id, channel, chat_id, user_id, rating, created_at, updated_at)"
                    " values (?, ?, ?, ?, ?, ?, ?)"
                    " on conflict (message_id, user_id)"
                    " do update set rating = excluded.rating, updated_at = excluded.updated_at",
                    [message_id, msg["channel"], msg["chat_id"], user_id, rating, at, at],
                )
                row = one(
                    db,
                    "select * from feedback where message_id = ? and user_id = ?",
                    [message_id, user_id],
                )
            return FeedbackRecord.model_validate(row)

        return await self.run(upsert)

    async def set_feedback_comment(
        self, message_id: int, user_id: str, comment: str, now: float | None = None
    ) -> bool:
        """Attach a comment to an existing rating; False when there is no rating."""
        at = time.time() if now is None else now
        return await self.run(
            lambda db: (
                db.execute(
                    "update feedback set comment = ?, updated_at = ?"
                    " where message_id = ? and user_id = ?",
                    [comment, at, message_id, user_id],
                ).rowcount
                > 0
            )
        )

    async def list_feedback(self, *, limit: int = 100, offset: int = 0) -> list[FeedbackRecord]:
        """Feedback, newest first."""
        return await self.run(
            lambda db: [
                FeedbackRecord.model_validate(r)
                for r in db.query(
                    "select * from feedback order by updated_at desc, id desc limit ? offset ?",
                    [limit, offset],
                )
            ]
        )


def _current_session(
    db: Database, channel: str, chat_id: str, user_id: str | None, now: float, idle: float
) -> SessionRecord:
    with db.atomic():
        row = one(
            db,
            "select * from sessions where channel = ? and chat_id = ?"
            " and finished_at is null order by id desc limit 1",
            [channel, chat_id],
        )
        if row is not None and now - row["last_activity_at"] <= idle:
            db.execute("update sessions set last_activity_at = ? where id = ?", [now, row["id"]])
            row["last_activity_at"] = now
            return SessionRecord.model_validate(row)
        if row is not None:
            db.execute(
                "update sessions set finished_at = ?, finish_reason = 'idle' where id = ?",
                [now, row["id"]],
            )
        cur = db.execute(
            "insert into sessions (channel, chat_id, user_id, started_at, last_activity_at)"
            " values (?, ?, ?, ?, ?)",
            [channel, chat_id, user_id, now, now],
        )
        return SessionRecord(
            id=int(cur.lastrowid or 0),
            channel=channel,
            chat_id=chat_id,
            user_id=user_id,
            started_at=now,
            last_activity_at=now,
        )


def _add_message(
    db: Database,
    session_id: int,
    role: Role,
    text: str,
    kind: MessageKind,
    inbox_id: int | None,
    trace: Trace | None,
    at: float,
) -> MessageRecord:
    with db.atomic():
        cur = db.execute(
            "insert into messages (session_id, role, text, kind, inbox_id, created_at)"
            " values (?, ?, ?, ?, ?, ?)",
            [session_id, role, text, kind, inbox_id, at],
        )
        message_id = int(cur.lastrowid or 0)
        if trace is not None:
            row = trace.model_dump()
            for key in _TRACE_LISTS:
                row[key] = json.dumps(row[key])
            db.table("traces").insert({"message_id": message_id, **row})
    return MessageRecord(
        id=message_id,
        session_id=session_id,
        role=role,
        text=text,
        kind=kind,
        inbox_id=inbox_id,
        created_at=at,
    )


def _history(
    db: Database, session_id: int, limit: int, exclude_kinds: Sequence[MessageKind]
) -> list[MessageRecord]:
    kinds: list[str] = list(exclude_kinds) or ["-"]
    marks = ", ".join("?" for _ in kinds)
    rows = db.query(
        f"select * from messages where session_id = ? and kind not in ({marks})"
        " order by id desc limit ?",
        [session_id, *kinds, limit],
    )
    return [_message(dict(r)) for r in rows][::-1]


def _message_for_inbox(db: Database, inbox_id: int, role: Role) -> MessageRecord | None:
    row = one(
        db,
        "select * from messages where inbox_id = ? and role = ? order by id desc limit 1",
        [inbox_id, role],
    )
    return None if row is None else _message(row)
