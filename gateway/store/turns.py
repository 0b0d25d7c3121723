"""A turn's store round trips: the chat's state with the turn's start, and its answer.

A text message costs one transaction before the model (`chat_state`: the languages, the
user's open question and, for a turn, the session, the user's message, the history and
the daily-quota admission) and one after it (`add_answer`: the answer, its trace, its
share of the daily counts and its tool calls in the day's usage).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from gateway.core.models import MessageKind
from gateway.core.records import ClaimFence, MessageRecord, OpenedTurn, Trace
from gateway.core.turn import ChatState, QuotaSpend, TurnStart
from gateway.errors import ClaimLost
from gateway.store.context import take_group_lines
from gateway.store.conversations import (
    NAME_UNLESS_ASKED,
    chat_lock_key,
    lock_chat,
    name_args,
    open_session,
    open_session_with_message,
    remember_name,
)
from gateway.store.inbox import FENCE_CLAIM, fence_args
from gateway.store.languages import LANGUAGE_COLUMNS, LANGUAGE_JOIN, language_args, language_in
from gateway.store.memory import memory_args, memory_in, memory_item, turn_memory
from gateway.store.messages import (
    MESSAGE_COLUMNS,
    inbox_turn,
    insert_fenced_answer,
    insert_message,
    read_history,
    store_attachments,
)
from gateway.store.personas import PERSONA_COLUMN, chat_persona
from gateway.store.registry import AWAITING_COLUMNS, AWAITING_JOIN, awaiting_in
from gateway.store.sql import Conn, QueriesBase, query, transaction
from gateway.store.tools import count_tool_calls
from gateway.store.usage import admit, spend
from gateway.usage import utc_day


class TurnQueries(QueriesBase):
    """The two transactions of a turn, and its start alone where the state was read before."""

    @transaction
    async def chat_state(
        self,
        c: Conn,
        channel: str,
        chat_id: str,
        user_id: str | None,
        now: float,
        turn: TurnStart | None = None,
    ) -> ChatState:
        """The chat's languages and the user's open question; and `turn` opened, unless the
        user has an open question (which the message may answer instead)."""
        # The language, the open question and, for a turn, what it reads before it writes
        # (the persona, whether its update was answered before, the user's memory) under the
        # chat's lock: one statement, which also remembers the user's name where it can.
        head: list[object] = []
        items, joins = [LANGUAGE_COLUMNS], [LANGUAGE_JOIN]
        args = language_args(channel, chat_id, user_id)
        named = False
        if turn is not None:
            items.append(PERSONA_COLUMN)
            args += [channel, chat_id]
            # The chat's lock in the same statement: what the turn reads next is read under it.
            lock = c.dialect.lock_item(chat_lock_key(channel, chat_id))
            if lock is not None:
                items.append(lock[0])
                args += lock[1]
            if turn.inbox_id is not None:
                items.append(INBOX_SEEN)
                args.append(turn.inbox_id)
            if turn.memory and turn.user_id is not None:
                items.append(memory_item(c, in_group=turn.in_group))
                args += memory_args(channel, chat_id, turn.user_id, in_group=turn.in_group)
            if turn.user_name and turn.user_id is not None and c.dialect.writable_cte:
                head = name_args(channel, turn.user_id, turn.user_name, turn.now)
                head += [channel, chat_id, turn.user_id, now]
                named = True
        args += [channel, user_id or ""]
        if user_id is not None:
            items.append(AWAITING_COLUMNS)
            joins.append(AWAITING_JOIN)
            args += [channel, chat_id, user_id, now]
        with_name = f"with named as ({NAME_UNLESS_ASKED}) " if named else ""
        row = await c.fetchrow(
            f"{with_name}select {', '.join(items)} from (select 1 as one) as x {' '.join(joins)}",
            *head,
            *args,
        )
        assert row is not None  # the select always gives one row
        awaiting = None if user_id is None else awaiting_in(row)
        opened = None
        if turn is not None and awaiting is None:
            read = TurnRead(
                persona=row["persona"],
                seen=turn.inbox_id is None or bool(row["inbox_seen"]),
                memory=memory_in(row) if "memory" in row else None,
                named=named,
            )
            opened = await _open_turn(c, turn, read)
        return ChatState(language=language_in(row), awaiting=awaiting, turn=opened)

    @transaction
    async def start_turn(self, c: Conn, start: TurnStart) -> OpenedTurn:
        """Start a turn in one transaction, for one whose chat state was read before: the
        session, the user's message (once, with what it carried) and its daily-quota
        admission, the history, the chat's persona, with `memory` the user's entries where
        this chat may use them, and with `context_since` the group's unaddressed lines since
        then (taken: cleared).

        When the inbox update was answered before (a crash between answer and delivery),
        that answer comes back instead and nothing is written.
        """
        return await _open_turn(c, start)

    async def add_answer(
        self,
        session_id: int,
        text: str,
        *,
        kind: MessageKind,
        inbox_id: int | None,
        trace: Trace,
        now: float,
        user_id: str | None,
        spent: QuotaSpend | None = None,
        tools: Sequence[tuple[str, str]] = (),
        fence: ClaimFence | None = None,
    ) -> MessageRecord:
        """Store an answer with its trace, and add what it spent to the daily counts and its
        tool calls, each (the name called, how it ended), to the day's tool usage.

        With `fence` (replicas), the update's claim is checked and its lease extended in the
        same statement, as `inbox_fence` does before a send; the answer is stored either way
        (the replica holding the claim now sends it) and ClaimLost raised when it did not hold.
        """
        answer, held = await self._add_answer(
            session_id,
            text,
            kind=kind,
            inbox_id=inbox_id,
            trace=trace,
            now=now,
            user_id=user_id,
            spent=spent,
            tools=tools,
            fence=fence,
        )
        if not held:  # said once the unit is over: the answer stays stored
            raise ClaimLost(f"update {inbox_id} was claimed by another replica")
        return answer

    @query  # one statement where the database can (else one unit: SQLite's are atomic)
    async def _add_answer(
        self,
        c: Conn,
        session_id: int,
        text: str,
        *,
        kind: MessageKind,
        inbox_id: int | None,
        trace: Trace,
        now: float,
        user_id: str | None,
        spent: QuotaSpend | None = None,
        tools: Sequence[tuple[str, str]] = (),
        fence: ClaimFence | None = None,
    ) -> tuple[MessageRecord, bool]:
        """`add_answer`'s unit: the answer, and whether `fence` (if any) held."""
        held = True
        if spent is None and not tools:
            if fence is None:
                answer = await insert_message(
                    c, session_id, "assistant", text, kind, inbox_id, trace, now, user_id=user_id
                )
                return answer, True
            answer, held = await insert_fenced_answer(
                c,
                session_id,
                text,
                kind,
                inbox_id,
                trace,
                now,
                fence=(FENCE_CLAIM, fence_args(fence, time.time())),
                user_id=user_id,
            )
        else:
            async with c.transaction():
                answer = await insert_message(
                    c, session_id, "assistant", text, kind, inbox_id, trace, now, user_id=user_id
                )
                if spent is not None:
                    await spend(c, spent)
                await count_tool_calls(c, utc_day(now), tools)
                if fence is not None:
                    held = await c.execute(FENCE_CLAIM, *fence_args(fence, time.time())) == 1
        return answer, held


INBOX_SEEN = (
    "exists (select 1 from messages where inbox_id = ? and role in ('user', 'assistant'))"
    " as inbox_seen"
)
"""Whether an inbox update's question or answer is stored already (a turn resumed after a
crash): a select item whose mark takes the inbox id."""


@dataclass(frozen=True)
class TurnRead:
    """What the statement reading the chat's state read for the turn, under the chat's lock."""

    persona: str | None
    seen: bool
    """The update may have a question or an answer stored (False: it has neither)."""
    memory: list[str] | None
    """The user's entries where this chat may use them (None: memory is not for this turn)."""
    named: bool
    """The user's name was remembered by that statement."""


async def _open_turn(c: Conn, start: TurnStart, read: TurnRead | None = None) -> OpenedTurn:
    """The turn's start; with an admission, nothing is written when a daily limit refuses it.

    `read`: what the statement that read the chat's state (and took its lock) read for it;
    None where nothing was (the lock is taken and everything read here).
    """
    if read is None:
        await lock_chat(c, start.channel, start.chat_id)
    if start.user_name and start.user_id is not None and not (read and read.named):
        await remember_name(c, start.channel, start.user_id, start.user_name, start.now)
    inbox_id = start.inbox_id
    history: list[MessageRecord] | None = None
    stored, done = None, None
    if inbox_id is not None and (read is None or read.seen):
        stored, done = await inbox_turn(c, inbox_id)
    if done is not None:
        return OpenedTurn(session_id=done.session_id, answer=done, resumed=True)
    if stored is not None:
        # Resumed after a crash: the turn stays in the session of its question, even if
        # that session went idle meanwhile; it was admitted when it was first stored.
        session_id = stored.session_id
    else:
        if start.admission is not None:
            over = await admit(c, start.admission.day, start.admission.checks)
            if over is not None:
                return OpenedTurn(over=over)
        message, new = await _ask(c, start)
        session_id = message.session_id
        await store_attachments(c, message.id, start.attachments, start.now)
        if new and not start.attachments:
            # A session opened by this message holds only it: no need to read it back.
            only = start.history_limit != 0 and "normal" not in start.exclude_kinds
            history = [message] if only else []
    if history is None:
        history = await read_history(c, session_id, start.history_limit, start.exclude_kinds)
    # The user's memory where this chat may use it (read with the chat's state, else here),
    # the group's unaddressed lines since the bot last answered there (taken: cleared), and
    # the chat's persona, in the same go.
    if read is not None and start.memory:
        entries = read.memory
    elif start.memory:
        entries = await turn_memory(
            c, start.channel, start.chat_id, start.user_id, in_group=start.in_group
        )
    else:
        entries = None
    lines = (
        await take_group_lines(c, start.channel, start.chat_id, start.context_since)
        if start.context_since is not None
        else []
    )
    return OpenedTurn(
        session_id=session_id,
        history=history,
        resumed=stored is not None,
        memory=entries,
        context=lines,
        persona=read.persona if read else await chat_persona(c, start.channel, start.chat_id),
    )


async def _ask(c: Conn, start: TurnStart) -> tuple[MessageRecord, bool]:
    """The user's message stored in the chat's session (continued, or opened); and whether
    the session is new. One statement where the database's `with` may insert."""
    if not c.dialect.writable_cte:
        session, new = await open_session(
            c, start.channel, start.chat_id, start.user_id, start.now, start.idle_seconds
        )
        message = await insert_message(
            c,
            session.id,
            "user",
            start.text,
            "normal",
            start.inbox_id,
            None,
            start.now,
            platform_message_id=start.platform_message_id,
            user_id=start.user_id,
        )
        return message, new
    fields = {
        "role": "user",
        "text": start.text,
        "kind": "normal",
        "inbox_id": start.inbox_id,
        "created_at": start.now,
        "platform_message_id": start.platform_message_id,
        "user_id": start.user_id,
    }
    message_id, session_id, new = await open_session_with_message(
        c,
        start.channel,
        start.chat_id,
        start.user_id,
        start.now,
        start.idle_seconds,
        [fields[name] for name in MESSAGE_COLUMNS[1:]],
    )
    return MessageRecord(id=message_id, session_id=session_id, **fields), new
