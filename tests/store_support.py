"""Store operations only tests use, on either database, written on the store's own SQL.

The gateway opens a turn with `chat_state` or `start_turn` and stores its answer with
`add_answer`; tests also seed and read rows more directly: a chat's session, a message of
any role, a session's history, a replaced skill text, the day's quota counts. Each helper
here is one unit of work of the store (`_run`), like a store method, so it runs on the
store's own connection (SQLite's store thread, or one of PostgreSQL's pool).
"""

from __future__ import annotations

import time
from collections.abc import Coroutine, Sequence
from typing import Any, TypeVar

from gateway.core.models import AttachmentRecord, MessageKind, Role
from gateway.core.records import MessageRecord, OpenedTurn, QuotaCount, SessionRecord, Trace
from gateway.core.turn import TurnStart
from gateway.store.base import Store
from gateway.store.conversations import lock_chat, open_session
from gateway.store.messages import attachments_by_message, insert_message, read_history
from gateway.store.sql import Conn, Work, insert_sql, marks

T = TypeVar("T")

_INSERT_VERSION = insert_sql(
    "skill_versions", ("slug", "content", "content_hash", "replaced_at", "proposal_id")
)


async def _unit(store: Store, work: Work[T], *, transaction: bool = False) -> T:
    return await store._run(work, transaction=transaction)


async def current_session(
    store: Store,
    channel: str,
    chat_id: str,
    user_id: str | None,
    now: float,
    idle_seconds: float,
) -> SessionRecord:
    """The chat's open session; one idle past `idle_seconds` is finished, a new one opened."""

    async def work(c: Conn) -> SessionRecord:
        await lock_chat(c, channel, chat_id)
        return (await open_session(c, channel, chat_id, user_id, now, idle_seconds))[0]

    return await _unit(store, work, transaction=True)


async def add_message(
    store: Store,
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

    def work(c: Conn) -> Coroutine[Any, Any, MessageRecord]:
        return insert_message(c, session_id, role, text, kind, inbox_id, trace, at, user_id=user_id)

    return await _unit(store, work, transaction=True)


async def history(
    store: Store, session_id: int, *, limit: int, exclude_kinds: Sequence[MessageKind] = ()
) -> list[MessageRecord]:
    """The session's last `limit` messages, oldest first, without the excluded kinds."""
    return await _unit(store, lambda c: read_history(c, session_id, limit, exclude_kinds))


async def attachments_of(
    store: Store, message_ids: Sequence[int]
) -> dict[int, list[AttachmentRecord]]:
    """The attachments of each message, in order."""
    return await _unit(store, lambda c: attachments_by_message(c, message_ids))


async def answer_for_inbox(store: Store, inbox_id: int) -> MessageRecord | None:
    """The answer already made for an inbox update, if a crash interrupted its delivery."""
    return await store.message_for_inbox(inbox_id, "assistant")


async def open_turn(
    store: Store,
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
    platform_message_id: str | None = None,
    attachments: Sequence[AttachmentRecord] = (),
    memory: bool = False,
    in_group: bool = False,
    context_since: float | None = None,
    user_name: str | None = None,
) -> OpenedTurn:
    """`start_turn` with its start spelled out, no daily limit applying (see `TurnStart`)."""
    start = TurnStart(
        channel,
        chat_id,
        user_id,
        text,
        inbox_id,
        now,
        idle_seconds,
        history_limit,
        exclude_kinds,
        platform_message_id,
        attachments,
        memory=memory,
        in_group=in_group,
        context_since=context_since,
        user_name=user_name,
    )
    return await store.start_turn(start)


async def add_skill_version(
    store: Store, slug: str, text: str, digest: str, proposal_id: int, at: float
) -> None:
    """Keep a live text as one an approval replaced."""

    async def work(c: Conn) -> None:
        await c.execute(_INSERT_VERSION, slug, text, digest, at, proposal_id)

    await _unit(store, work)


async def count_proposals(store: Store) -> int:
    """How many proposals there are."""

    async def work(c: Conn) -> int:
        return int(await c.fetchval("select count(*) from proposals") or 0)

    return await _unit(store, work)


async def quota_counts(store: Store, day: str) -> list[QuotaCount]:
    """The day's counts, biggest spenders first."""

    async def work(c: Conn) -> list[QuotaCount]:
        rows = await c.fetch(
            "select * from quota_counts where day = ? and scope <> 'flag'"
            " order by tokens desc, answers desc",
            day,
        )
        return [QuotaCount.model_validate(r) for r in rows]

    return await _unit(store, work)


async def reviewer_names(store: Store, deciders: Sequence[str]) -> dict[str, str]:
    """Remembered names of several deciders."""
    wanted = list(dict.fromkeys(deciders))
    if not wanted:
        return {}

    async def work(c: Conn) -> dict[str, str]:
        rows = await c.fetch(
            f"select decider, name from reviewer_names where decider in ({marks(wanted)})",
            *wanted,
        )
        return {str(r["decider"]): str(r["name"]) for r in rows}

    return await _unit(store, work)
