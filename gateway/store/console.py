"""What the web console reads: conversations, daily ratings, downvotes, skill use and history."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from gateway.core.records import FeedbackRecord, MessageRecord, Trace
from gateway.review.proposals import Proposal, SkillVersion
from gateway.store.messages import TRACE_LISTS, message_record, with_attachments
from gateway.store.proposals import proposal_record
from gateway.store.sql import Conn, QueriesBase, decode_json_fields, marks, query, transaction

_BIGINT = range(-(2**63), 2**63)
_TRACE_FIELDS = tuple(Trace.model_fields)


def _ids(ids: Sequence[int]) -> list[int]:
    """The ids an integer column can hold (no row has any other; drivers refuse them)."""
    return [int(i) for i in ids if int(i) in _BIGINT]


def _utc_day(moment: float) -> str:
    """The UTC day of a timestamp, as `YYYY-MM-DD`."""
    return dt.datetime.fromtimestamp(moment, tz=dt.UTC).date().isoformat()


class SessionSummary(BaseModel):
    """A session with its message, placeholder and rating counts."""

    id: int
    channel: str
    chat_id: str
    user_id: str | None = None
    started_at: float
    last_activity_at: float
    finished_at: float | None = None
    finish_reason: str | None = None
    messages: int = 0
    errors: int = 0
    ups: int = 0
    downs: int = 0
    consumed_by: int | None = None
    opening: str | None = None
    user_name: str | None = None
    """The user's display name as the platform last sent it."""


class TranscriptEntry(BaseModel):
    """One message of a transcript, with the answer's trace and ratings."""

    message: MessageRecord
    trace: Trace | None = None
    feedback: list[FeedbackRecord] = Field(default_factory=list)


class DayRating(BaseModel):
    """Ratings given on one UTC day."""

    day: str
    ups: int
    downs: int

    @property
    def total(self) -> int:
        return self.ups + self.downs

    @property
    def rate(self) -> float:
        return self.ups / self.total if self.total else 0.0


class Downvote(BaseModel):
    """A 👎 with the answer it rates and the question before it."""

    feedback: FeedbackRecord
    session_id: int
    answer: str
    question: str | None = None


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
     order by m.id limit 1) as opening,
  (select n.name from user_names n where n.channel = s.channel and n.user_id = s.user_id)
     as user_name
from sessions s
"""


class ConsoleQueries(QueriesBase):
    """Read-only views for the admin console."""

    @query
    async def count_sessions(self, c: Conn, channel: str | None = None) -> int:
        """How many sessions there are (of one channel)."""
        if channel:
            n = await c.fetchval("select count(*) from sessions where channel = ?", channel)
        else:
            n = await c.fetchval("select count(*) from sessions")
        return int(n or 0)

    @query
    async def has_sessions(self, c: Conn, channel: str) -> bool:
        """Whether `channel` ever had a session (one index entry read, not all of them)."""
        row = await c.fetchrow("select 1 as one from sessions where channel = ? limit 1", channel)
        return row is not None

    @query
    async def known_users(self, c: Conn, limit: int = 200) -> list[tuple[str, str, str]]:
        """(channel, user id, name or "") of the users who talked to the bot, latest first."""
        rows = await c.fetch(
            "select s.channel, s.user_id, max(s.last_activity_at) as seen,"
            " max(n.name) as name from sessions s left join user_names n"
            " on n.channel = s.channel and n.user_id = s.user_id"
            " where s.user_id is not null group by s.channel, s.user_id"
            " order by seen desc, s.channel, s.user_id limit ?",
            c.dialect.limit(limit),
        )
        return [(str(r["channel"]), str(r["user_id"]), str(r["name"] or "")) for r in rows]

    @query
    async def session_summaries(
        self, c: Conn, *, limit: int = 50, offset: int = 0, channel: str | None = None
    ) -> list[SessionSummary]:
        """Sessions, most recently active first."""
        where, params = ("where s.channel = ?", [channel]) if channel else ("", [])
        rows = await c.fetch(
            f"{_SUMMARY} {where} order by s.last_activity_at desc, s.id desc limit ? offset ?",
            *params,
            c.dialect.limit(limit),
            max(int(offset), 0),
        )
        return [SessionSummary.model_validate(r) for r in rows]

    @query
    async def sessions_by_id(self, c: Conn, ids: Sequence[int]) -> dict[int, SessionSummary]:
        """Summaries of the given sessions (unknown ids are left out)."""
        wanted = _ids(ids)
        if not wanted:
            return {}
        rows = await c.fetch(f"{_SUMMARY} where s.id in ({marks(wanted)})", *wanted)
        return {r["id"]: SessionSummary.model_validate(r) for r in rows}

    @transaction
    async def session_transcript(self, c: Conn, session_id: int) -> list[TranscriptEntry]:
        """Every message of a session in order, with traces and ratings."""
        if session_id not in _BIGINT:
            return []
        # Ratings and messages are read in one snapshot, so they agree with each other.
        if c.dialect.snapshot:
            await c.execute(c.dialect.snapshot)
        rated = await c.fetch(
            "select f.* from feedback f join messages m on m.id = f.message_id"
            " where m.session_id = ? order by f.id",
            session_id,
        )
        messages = await c.fetch(
            f"select m.*, t.message_id as traced, {', '.join(f't.{f}' for f in _TRACE_FIELDS)}"
            " from messages m left join traces t on t.message_id = m.id"
            " where m.session_id = ? order by m.id",
            session_id,
        )
        ratings: dict[int, list[FeedbackRecord]] = {}
        for r in rated:
            ratings.setdefault(r["message_id"], []).append(FeedbackRecord.model_validate(r))
        entries = [_entry(r, ratings.get(r["id"], [])) for r in messages]
        await with_attachments(c, [e.message for e in entries])
        return entries

    @query
    async def feedback_by_session(
        self, c: Conn, ids: Sequence[int]
    ) -> dict[int, list[FeedbackRecord]]:
        """The ratings given in each of the sessions, in order."""
        wanted = _ids(ids)
        if not wanted:
            return {}
        rows = await c.fetch(
            "select f.*, m.session_id from feedback f join messages m on m.id = f.message_id"
            f" where m.session_id in ({marks(wanted)}) order by f.id",
            *wanted,
        )
        out: dict[int, list[FeedbackRecord]] = {}
        for row in rows:
            sid = row.pop("session_id")
            out.setdefault(sid, []).append(FeedbackRecord.model_validate(row))
        return out

    @query
    async def daily_ratings(self, c: Conn, since: float | None = None) -> list[DayRating]:
        """👍 and 👎 per UTC day of the rating, oldest day first."""
        where, params = ("where created_at >= ?", [float(since)]) if since is not None else ("", [])
        # The databases name days differently (and round timestamps differently on the way),
        # so SQL counts per moment and Python puts the moments on their UTC days.
        rows = await c.fetch(
            "select created_at, count(case when rating > 0 then 1 end) as ups,"
            f" count(case when rating < 0 then 1 end) as downs from feedback {where}"
            " group by created_at",
            *params,
        )
        days: dict[str, list[int]] = {}
        for r in rows:
            counts = days.setdefault(_utc_day(r["created_at"]), [0, 0])
            counts[0] += int(r["ups"])
            counts[1] += int(r["downs"])
        return [
            DayRating(day=day, ups=ups, downs=downs) for day, (ups, downs) in sorted(days.items())
        ]

    @query
    async def latest_downvotes(self, c: Conn, limit: int = 20) -> list[Downvote]:
        """The newest 👎, with the answer and the question it followed."""
        rows = await c.fetch(
            "select f.*, m.session_id, m.text as answer, (select q.text from messages q"
            " where q.session_id = m.session_id and q.id < m.id and q.role = 'user'"
            " order by q.id desc limit 1) as question from feedback f"
            " join messages m on m.id = f.message_id where f.rating < 0"
            " order by f.updated_at desc, f.id desc limit ?",
            c.dialect.limit(limit),
        )
        out = []
        for row in rows:
            extra: dict[str, Any] = {k: row.pop(k) for k in ("session_id", "answer", "question")}
            out.append(Downvote(feedback=FeedbackRecord.model_validate(row), **extra))
        return out

    @query
    async def review_queue(self, c: Conn, *, limit: int = 50, offset: int = 0) -> list[Proposal]:
        """Proposals with the pending ones first (oldest first), then the rest newest first."""
        rows = await c.fetch(
            "select * from proposals order by case when status = 'pending' then 0 else 1 end,"
            " case when status = 'pending' then id else -id end limit ? offset ?",
            c.dialect.limit(limit),
            max(int(offset), 0),
        )
        return [proposal_record(r) for r in rows]

    @query
    async def skill_proposals(self, c: Conn, slug: str) -> list[Proposal]:
        """Every proposal that creates or changes `slug`, newest first."""
        rows = await c.fetch(
            "select * from proposals where coalesce(target, name) = ? order by id desc", slug
        )
        return [proposal_record(r) for r in rows]

    @query
    async def skill_versions(self, c: Conn, slug: str) -> list[SkillVersion]:
        """Texts of `slug` that approvals replaced, newest first."""
        rows = await c.fetch("select * from skill_versions where slug = ? order by id desc", slug)
        return [SkillVersion.model_validate(r) for r in rows]

    @transaction
    async def sign_out(self, c: Conn, nonce: str, expires_at: float, now: float) -> None:
        """Remember a signed-out session until it would have expired; forget expired ones."""
        await c.execute("delete from console_signouts where expires_at < ?", now)
        await c.execute(
            "insert into console_signouts (nonce, expires_at) values (?, ?)"
            " on conflict (nonce) do nothing",
            nonce,
            expires_at,
        )

    @query
    async def signed_out(self, c: Conn, nonce: str) -> bool:
        """True when the session with this nonce was signed out."""
        found = await c.fetchval("select 1 from console_signouts where nonce = ?", nonce)
        return found is not None


def _entry(row: dict[str, Any], feedback: list[FeedbackRecord]) -> TranscriptEntry:
    traced = row.pop("traced")
    trace_row = {k: row.pop(k) for k in _TRACE_FIELDS}
    trace = None
    if traced is not None:
        trace = Trace.model_validate(decode_json_fields(trace_row, *TRACE_LISTS))
    return TranscriptEntry(message=message_record(row), trace=trace, feedback=feedback)
