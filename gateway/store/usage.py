"""Tokens per answer and per synthesis run, and the day's quota counts.

A quota count is one row per UTC day and subject (a user, a group chat, the gateway),
raised in the database itself: an answer is admitted by one transaction that raises
every count it falls under and checks the new values, so two replicas, or a restart,
never let more answers through than the limit.
"""

from __future__ import annotations

from collections.abc import Sequence

from gateway.core.records import AnswerUsage, QuotaCheck, RunUsage
from gateway.core.turn import QuotaSpend
from gateway.store.sql import Conn, QueriesBase, query, transaction


class _OverLimit(Exception):
    def __init__(self, check: QuotaCheck) -> None:
        self.check = check


_RAISE = (
    "insert into quota_counts (day, scope, subject, answers, tokens, cost)"
    " values (?, ?, ?, ?, ?, ?) on conflict (day, scope, subject) do update set"
    " answers = quota_counts.answers + excluded.answers,"
    " tokens = quota_counts.tokens + excluded.tokens,"
    " cost = quota_counts.cost + excluded.cost"
    " returning answers, tokens, cost"
)


class UsageQueries(QueriesBase):
    """What answers and runs cost, and the quota counts of each day."""

    @query
    async def answer_usage(self, c: Conn, since: float, until: float) -> list[AnswerUsage]:
        """Every traced answer given in [since, until), oldest first."""
        rows = await c.fetch(
            "select m.created_at as at, s.channel, s.chat_id, m.user_id, t.model,"
            " t.prompt_tokens, t.completion_tokens, t.tokens_known"
            " from traces t join messages m on m.id = t.message_id"
            " join sessions s on s.id = m.session_id"
            " where m.created_at >= ? and m.created_at < ? order by m.id",
            since,
            until,
        )
        for r in rows:
            r["tokens_known"] = bool(r["tokens_known"]) if r["tokens_known"] is not None else False
        return [AnswerUsage.model_validate(r) for r in rows]

    @query
    async def speech_seconds(self, c: Conn, since: float, until: float) -> float:
        """Seconds of speech transcribed for messages sent in [since, until)."""
        value = await c.fetchval(
            "select coalesce(sum(a.duration), 0) from attachments a"
            " join messages m on m.id = a.message_id"
            " where a.sent_as = 'transcript' and m.created_at >= ? and m.created_at < ?",
            since,
            until,
        )
        return float(value or 0)

    @query
    async def spoken_seconds(self, c: Conn, since: float, until: float) -> float:
        """Seconds of answers spoken (text-to-speech) in [since, until)."""
        value = await c.fetchval(
            "select coalesce(sum(spoken_seconds), 0) from messages"
            " where spoken_seconds is not null and created_at >= ? and created_at < ?",
            since,
            until,
        )
        return float(value or 0)

    @query
    async def spoken_by(self, c: Conn, channel: str, user_id: str, since: float) -> float:
        """Seconds of the answers spoken to one user since `since` (their day's count)."""
        value = await c.fetchval(
            "select coalesce(sum(m.spoken_seconds), 0) from messages m"
            " join sessions s on s.id = m.session_id"
            " where s.channel = ? and m.user_id = ? and m.spoken_seconds is not null"
            " and m.created_at >= ?",
            channel,
            user_id,
            since,
        )
        return float(value or 0)

    @transaction
    async def record_spoken(
        self, c: Conn, message_id: int, seconds: float, spent: QuotaSpend | None = None
    ) -> None:
        """An answer was spoken for `seconds`: kept on it, and its cost in the daily counts."""
        await c.execute("update messages set spoken_seconds = ? where id = ?", seconds, message_id)
        if spent is not None:
            await spend(c, spent)

    @query
    async def pictured_by(self, c: Conn, channel: str, user_id: str, since: float) -> int:
        """Pictures made for one user's answers since `since` (their day's count)."""
        value = await c.fetchval(
            "select coalesce(sum(m.pictures), 0) from messages m"
            " join sessions s on s.id = m.session_id"
            " where s.channel = ? and m.user_id = ? and m.pictures is not null"
            " and m.created_at >= ?",
            channel,
            user_id,
            since,
        )
        return int(value or 0)

    @transaction
    async def record_pictures(
        self, c: Conn, message_id: int, count: int, spent: QuotaSpend | None = None
    ) -> None:
        """`count` pictures were made for an answer: kept on it, their cost in the counts."""
        await c.execute("update messages set pictures = ? where id = ?", count, message_id)
        if spent is not None:
            await spend(c, spent)

    @query
    async def images_made(self, c: Conn, since: float, until: float) -> int:
        """Pictures made for answers in [since, until)."""
        value = await c.fetchval(
            "select coalesce(sum(pictures), 0) from messages"
            " where pictures is not null and created_at >= ? and created_at < ?",
            since,
            until,
        )
        return int(value or 0)

    @query
    async def run_usage(self, c: Conn, since: float, until: float) -> list[RunUsage]:
        """The tokens of every synthesis run started in [since, until)."""
        rows = await c.fetch(
            "select started_at as at, model, prompt_tokens, completion_tokens"
            " from synthesis_runs where started_at >= ? and started_at < ? order by id",
            since,
            until,
        )
        return [RunUsage.model_validate(r) for r in rows]

    @query
    async def quota_admit(
        self, c: Conn, day: str, checks: Sequence[QuotaCheck]
    ) -> QuotaCheck | None:
        """Count one more answer under every check, or none: the check whose limit is reached."""
        return await admit(c, day, checks)

    @transaction
    async def quota_spend(
        self,
        c: Conn,
        day: str,
        counts: Sequence[tuple[str, str, int]],
        *,
        tokens: int,
        cost: float,
    ) -> None:
        """Add an answer's tokens and cost to each (scope, subject, answers to add) count."""
        await spend(c, QuotaSpend(day, tuple(counts), tokens, cost))

    @query
    async def quota_first(self, c: Conn, day: str, flag: str) -> bool:
        """True for the first caller of the day with this flag (on any replica)."""
        return (
            await c.execute(
                "insert into quota_counts (day, scope, subject) values (?, 'flag', ?)"
                " on conflict (day, scope, subject) do nothing",
                day,
                flag,
            )
            == 1
        )

    @query
    async def quota_prune(self, c: Conn, before_day: str) -> int:
        """Forget the counts of days before `before_day`."""
        return await c.execute("delete from quota_counts where day < ?", before_day)


async def admit(c: Conn, day: str, checks: Sequence[QuotaCheck]) -> QuotaCheck | None:
    """Raise every count by one answer, or none (a savepoint): the check whose limit is reached."""
    try:
        async with c.transaction():
            for check in checks:
                row = await c.fetchrow(_RAISE, day, check.scope, check.subject, 1, 0, 0.0)
                assert row is not None
                if (
                    (check.answers is not None and row["answers"] > check.answers)
                    or (check.tokens is not None and row["tokens"] >= check.tokens)
                    or (check.cost is not None and row["cost"] >= check.cost)
                ):
                    raise _OverLimit(check)  # the savepoint rolls every raise back
    except _OverLimit as over:
        return over.check
    return None


async def spend(c: Conn, spent: QuotaSpend) -> None:
    """Add an answer's tokens and cost (and answers given back) to each of its counts."""
    for scope, subject, answers in spent.counts:
        await c.execute(_RAISE, spent.day, scope, subject, answers, spent.tokens, spent.cost)
