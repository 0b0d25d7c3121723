"""Messages as the store writes and reads them: the row, its trace, its attachments."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from gateway.core.models import AttachmentRecord, MessageKind, Role
from gateway.core.records import MessageRecord, Trace
from gateway.store.sql import Conn, decode_json_fields, insert_sql, marks

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
MESSAGE_COLUMNS = (
    "session_id",
    "role",
    "text",
    "kind",
    "inbox_id",
    "created_at",
    "platform_message_id",
    "user_id",
)
_INSERT_MESSAGE = insert_sql("messages", MESSAGE_COLUMNS)
_THEN_TRACE = (
    f"insert into traces ({', '.join(_TRACE_COLUMNS)})"
    f" select m.id, {marks(_TRACE_COLUMNS[1:])} from m returning message_id"
)


def message_record(row: dict[str, Any]) -> MessageRecord:
    """A messages row as a record."""
    return MessageRecord.model_validate(decode_json_fields(row, "platform_message_ids"))


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


async def insert_fenced_answer(
    c: Conn,
    session_id: int,
    text: str,
    kind: MessageKind,
    inbox_id: int | None,
    trace: Trace,
    at: float,
    *,
    fence: tuple[str, Sequence[Any]],
    user_id: str | None = None,
) -> tuple[MessageRecord, bool]:
    """`insert_message` of an answer with its trace, and the update `fence` (an `update ...`
    statement and its arguments) run with it; whether the fence touched a row. One statement
    where the database's `with` may insert."""
    args = (session_id, "assistant", text, kind, inbox_id, at, None, user_id)
    sql, fence_args = fence
    if not c.dialect.writable_cte:
        held = await c.execute(sql, *fence_args) == 1
        answer = await insert_message(
            c, session_id, "assistant", text, kind, inbox_id, trace, at, user_id=user_id
        )
        return answer, held
    row = await c.fetchrow(
        f"with f as ({sql} returning 1), m as ({_INSERT_MESSAGE} returning id),"
        f" t as ({_THEN_TRACE}) select t.message_id, exists (select 1 from f) as held from t",
        *fence_args,
        *args,
        *trace_args(trace),
    )
    assert row is not None  # the answer is always inserted
    answer = MessageRecord(
        id=row["message_id"],
        session_id=session_id,
        role="assistant",
        text=text,
        kind=kind,
        inbox_id=inbox_id,
        created_at=at,
        user_id=user_id,
    )
    return answer, bool(row["held"])


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


SET_PLATFORM_IDS = "update messages set platform_message_ids = ? where id = ?"
"""The platform's ids of every message that carried this one so far; marks: `ids_args`."""


def ids_args(message_id: int, ids: Sequence[str]) -> tuple[str, int]:
    """The values of `SET_PLATFORM_IDS`' marks."""
    return json.dumps(list(ids)), message_id


async def set_platform_ids(c: Conn, message_id: int, ids: Sequence[str]) -> None:
    """The platform's ids of every message that carried this one so far."""
    await c.execute(SET_PLATFORM_IDS, *ids_args(message_id, ids))
