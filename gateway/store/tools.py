"""Tools: the confirmations asked of users, and the day's calls per tool and status.

A confirmation is decided once: the first press from the user it was asked of, before it
expires, wins; a later press, another user's, or the waiting turn giving up (expiry) finds
the row decided and changes nothing. Every replica reads the same rows, so the replica
that gets the press need not be the one waiting for it.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from typing import Literal

from gateway.store.sql import Conn, QueriesBase, query, transaction

PressOutcome = Literal["decided", "already", "foreign", "missing"]


class ToolQueries(QueriesBase):
    """Confirmations and tool usage counts."""

    @query
    async def open_confirmation(
        self,
        c: Conn,
        channel: str,
        chat_id: str,
        user_id: str,
        tool: str,
        arguments: str,
        *,
        digest: str,
        expires_at: float,
        now: float | None = None,
    ) -> int:
        """A new confirmation awaiting the user's press; its id. `digest` is of the exact
        arguments that will run: a press counts only when it was signed for the same."""
        at = time.time() if now is None else now
        value = await c.fetchval(
            "insert into tool_confirmations (channel, chat_id, user_id, tool, arguments,"
            " arguments_digest, created_at, expires_at) values (?, ?, ?, ?, ?, ?, ?, ?)"
            " returning id",
            channel,
            chat_id,
            user_id,
            tool,
            arguments,
            digest,
            at,
            expires_at,
        )
        return int(value)

    @transaction
    async def press_confirmation(
        self,
        c: Conn,
        confirmation_id: int,
        channel: str,
        user_id: str | None,
        decision: Literal["approved", "declined"],
        *,
        digest: str,
        now: float | None = None,
    ) -> PressOutcome:
        """Record a user's press: only theirs, only once, only before it expired, and only
        for the arguments it was signed for (`digest`; another is "missing")."""
        at = time.time() if now is None else now
        changed = await c.execute(
            "update tool_confirmations set decision = ?, decided_at = ?"
            " where id = ? and channel = ? and user_id = ? and arguments_digest = ?"
            " and decision is null and expires_at > ?",
            decision,
            at,
            confirmation_id,
            channel,
            user_id or "",
            digest,
            at,
        )
        if changed == 1:
            return "decided"
        row = await c.fetchrow(
            "select user_id, decision from tool_confirmations"
            " where id = ? and channel = ? and arguments_digest = ?",
            confirmation_id,
            channel,
            digest,
        )
        if row is None:
            return "missing"
        return "foreign" if row["user_id"] != (user_id or "") else "already"

    @query
    async def confirmation_decision(self, c: Conn, confirmation_id: int) -> str | None:
        """The decision so far (None while the user may still press)."""
        value = await c.fetchval(
            "select decision from tool_confirmations where id = ?", confirmation_id
        )
        return None if value is None else str(value)

    @transaction
    async def expire_confirmation(
        self, c: Conn, confirmation_id: int, now: float | None = None
    ) -> str:
        """Close an undecided confirmation as expired; the decision it ends with."""
        at = time.time() if now is None else now
        await c.execute(
            "update tool_confirmations set decision = 'expired', decided_at = ?"
            " where id = ? and decision is null",
            at,
            confirmation_id,
        )
        value = await c.fetchval(
            "select decision from tool_confirmations where id = ?", confirmation_id
        )
        return str(value or "expired")

    @query
    async def tool_usage(self, c: Conn, since_day: str) -> list[tuple[str, str, str, int]]:
        """(day, tool, status, calls) from `since_day` on, oldest first."""
        rows = await c.fetch(
            "select day, tool, status, calls from tool_usage where day >= ?"
            " order by day, tool, status",
            since_day,
        )
        return [(r["day"], r["tool"], r["status"], int(r["calls"])) for r in rows]


async def count_tool_calls(c: Conn, day: str, calls: Sequence[tuple[str, str]]) -> None:
    """Add each call, (tool, how it ended), to the day's tool usage."""
    if not calls:
        return
    counted = Counter(calls)
    await c.executemany(
        "insert into tool_usage (day, tool, status, calls) values (?, ?, ?, ?)"
        " on conflict (day, tool, status) do update set calls = tool_usage.calls + excluded.calls",
        [(day, tool, status, n) for (tool, status), n in sorted(counted.items())],
    )
