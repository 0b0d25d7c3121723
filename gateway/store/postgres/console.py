"""What the web console reads on PostgreSQL: conversations, daily ratings, downvotes, skill use.

The twin of `gateway.store.console`, whose result models and row helpers it shares.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gateway.core.records import FeedbackRecord
from gateway.skills.proposals import Proposal, SkillVersion
from gateway.store.console import (
    DayRating,
    Downvote,
    SessionSummary,
    TranscriptEntry,
    _entry,
    _proposal,
)
from gateway.store.postgres.base import PgQueriesBase, database_errors

_BIGINT = range(-(2**63), 2**63)

_SUMMARY = """
select s.*,
  (select count(*) from messages m where m.session_id = s.id) as messages,
  (select count(*) from messages m where m.session_id = s.id and m.kind = 'error') as errors,
  (select count(*) from feedback f join messages m on m.id = f.message_id
     where m.session_id = s.id and f.rating > 0) as ups,
  (select count(*) from feedback f join messages m on m.id = f.message_id
     where m.session_id = s.id and f.rating < 0) as downs,
  (select c.run_id from consumed_sessions c where c.session_id = s.id) as consumed_by,
  (select m.text from messages m where m.session_id = s.id and m.role = 'user'
     order by m.id limit 1) as opening
from sessions s
"""


def _page(limit: int, offset: int) -> tuple[int | None, int]:
    """LIMIT and OFFSET as SQLite reads them: a negative limit is none, a negative offset 0."""
    return (None if limit < 0 else limit), max(offset, 0)


def _ids(ids: Sequence[int]) -> list[int]:
    """The ids a bigint column can hold (no row has any other)."""
    return [int(i) for i in ids if int(i) in _BIGINT]


class PgConsoleQueries(PgQueriesBase):
    """Read-only views for the admin console."""

    async def count_sessions(self, channel: str | None = None) -> int:
        """How many sessions there are (of one channel)."""
        if channel:
            n = await self._fetchval("select count(*) from sessions where channel = $1", channel)
        else:
            n = await self._fetchval("select count(*) from sessions")
        return int(n or 0)

    async def session_summaries(
        self, *, limit: int = 50, offset: int = 0, channel: str | None = None
    ) -> list[SessionSummary]:
        """Sessions, most recently active first."""
        where, params = ("where s.channel = $1", [channel]) if channel else ("", [])
        n = len(params)
        sql = (
            f"{_SUMMARY} {where} order by s.last_activity_at desc, s.id desc"
            f" limit ${n + 1} offset ${n + 2}"
        )
        rows = await self._fetch(sql, *params, *_page(limit, offset))
        return [SessionSummary.model_validate(r) for r in rows]

    async def sessions_by_id(self, ids: Sequence[int]) -> dict[int, SessionSummary]:
        """Summaries of the given sessions (unknown ids are left out)."""
        wanted = _ids(ids)
        if not wanted:
            return {}
        rows = await self._fetch(f"{_SUMMARY} where s.id = any($1::bigint[])", wanted)
        return {r["id"]: SessionSummary.model_validate(r) for r in rows}

    async def session_transcript(self, session_id: int) -> list[TranscriptEntry]:
        """Every message of a session in order, with traces and ratings."""
        if session_id not in _BIGINT:
            return []
        with database_errors():
            async with (
                self._require_pool().acquire() as conn,
                conn.transaction(isolation="repeatable_read", readonly=True),
            ):
                rated = await conn.fetch(
                    "select f.* from feedback f join messages m on m.id = f.message_id"
                    " where m.session_id = $1 order by f.id",
                    session_id,
                )
                messages = await conn.fetch(
                    "select m.*, t.message_id as traced, t.skills_offered, t.skills_loaded,"
                    " t.tools_used, t.completed, t.error, t.latency_ms, t.prompt_tokens,"
                    " t.completion_tokens, t.model from messages m left join traces t"
                    " on t.message_id = m.id where m.session_id = $1 order by m.id",
                    session_id,
                )
        ratings: dict[int, list[FeedbackRecord]] = {}
        for r in rated:
            ratings.setdefault(r["message_id"], []).append(FeedbackRecord.model_validate(dict(r)))
        return [_entry(dict(r), ratings.get(r["id"], [])) for r in messages]

    async def feedback_by_session(self, ids: Sequence[int]) -> dict[int, list[FeedbackRecord]]:
        """The ratings given in each of the sessions, in order."""
        wanted = _ids(ids)
        if not wanted:
            return {}
        rows = await self._fetch(
            "select f.*, m.session_id from feedback f join messages m on m.id = f.message_id"
            " where m.session_id = any($1::bigint[]) order by f.id",
            wanted,
        )
        out: dict[int, list[FeedbackRecord]] = {}
        for row in rows:
            sid = row.pop("session_id")
            out.setdefault(sid, []).append(FeedbackRecord.model_validate(row))
        return out

    async def daily_ratings(self, since: float | None = None) -> list[DayRating]:
        """👍 and 👎 per UTC day of the rating, oldest day first."""
        where, params = (
            ("where created_at >= $1", [float(since)]) if since is not None else ("", [])
        )
        sql = (
            "select to_char(to_timestamp(created_at) at time zone 'UTC', 'YYYY-MM-DD') as day,"
            " count(*) filter (where rating > 0) as ups,"
            f" count(*) filter (where rating < 0) as downs from feedback {where}"
            " group by day order by day"
        )
        rows = await self._fetch(sql, *params)
        return [DayRating(day=r["day"], ups=int(r["ups"]), downs=int(r["downs"])) for r in rows]

    async def latest_downvotes(self, limit: int = 20) -> list[Downvote]:
        """The newest 👎, with the answer and the question it followed."""
        sql = (
            "select f.*, m.session_id, m.text as answer, (select q.text from messages q"
            " where q.session_id = m.session_id and q.id < m.id and q.role = 'user'"
            " order by q.id desc limit 1) as question from feedback f"
            " join messages m on m.id = f.message_id where f.rating < 0"
            " order by f.updated_at desc, f.id desc limit $1"
        )
        out = []
        for row in await self._fetch(sql, _page(limit, 0)[0]):
            extra: dict[str, Any] = {k: row.pop(k) for k in ("session_id", "answer", "question")}
            out.append(Downvote(feedback=FeedbackRecord.model_validate(row), **extra))
        return out

    async def review_queue(self, *, limit: int = 50, offset: int = 0) -> list[Proposal]:
        """Proposals with the pending ones first (oldest first), then the rest newest first."""
        rows = await self._fetch(
            "select * from proposals order by status = 'pending' desc,"
            " case when status = 'pending' then id else -id end limit $1 offset $2",
            *_page(limit, offset),
        )
        return [_proposal(r) for r in rows]

    async def count_proposals(self) -> int:
        """How many proposals there are."""
        return int(await self._fetchval("select count(*) from proposals") or 0)

    async def skill_proposals(self, slug: str) -> list[Proposal]:
        """Every proposal that creates or changes `slug`, newest first."""
        rows = await self._fetch(
            "select * from proposals where coalesce(target, name) = $1 order by id desc", slug
        )
        return [_proposal(r) for r in rows]

    async def skill_versions(self, slug: str) -> list[SkillVersion]:
        """Texts of `slug` that approvals replaced, newest first."""
        rows = await self._fetch(
            "select * from skill_versions where slug = $1 order by id desc", slug
        )
        return [SkillVersion.model_validate(r) for r in rows]
