"""What the web console reads: conversations, daily ratings, downvotes, skill use and history."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field
from sqlite_utils import Database

from gateway.core.records import FeedbackRecord, MessageRecord, Trace
from gateway.skills.proposals import Proposal, SkillVersion
from gateway.store.base import QueriesBase, decode_json_fields, one


def _rate(ups: int, total: int) -> float | None:
    return ups / total if total else None


def _proposal(row: dict[str, Any]) -> Proposal:
    return Proposal.model_validate(decode_json_fields(row, "based_on"))


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
     order by m.id limit 1) as opening
from sessions s
"""


class ConsoleQueries(QueriesBase):
    """Read-only views for the admin console."""

    async def count_sessions(self, channel: str | None = None) -> int:
        """How many sessions there are (of one channel)."""
        where, params = ("where channel = ?", [channel]) if channel else ("", [])
        row = await self.run(
            lambda db: one(db, f"select count(*) as n from sessions {where}", params)
        )
        return int(row["n"]) if row else 0

    async def session_summaries(
        self, *, limit: int = 50, offset: int = 0, channel: str | None = None
    ) -> list[SessionSummary]:
        """Sessions, most recently active first."""
        where, params = ("where s.channel = ?", [channel]) if channel else ("", [])
        sql = f"{_SUMMARY} {where} order by s.last_activity_at desc, s.id desc limit ? offset ?"
        return await self.run(
            lambda db: [
                SessionSummary.model_validate(dict(r))
                for r in db.query(sql, [*params, limit, offset])
            ]
        )

    async def sessions_by_id(self, ids: Sequence[int]) -> dict[int, SessionSummary]:
        """Summaries of the given sessions (unknown ids are left out)."""
        wanted = list(ids)
        if not wanted:
            return {}
        marks = ", ".join("?" for _ in wanted)
        rows = await self.run(
            lambda db: [dict(r) for r in db.query(f"{_SUMMARY} where s.id in ({marks})", wanted)]
        )
        return {r["id"]: SessionSummary.model_validate(r) for r in rows}

    async def session_transcript(self, session_id: int) -> list[TranscriptEntry]:
        """Every message of a session in order, with traces and ratings."""

        def read(db: Database) -> list[TranscriptEntry]:
            ratings: dict[int, list[FeedbackRecord]] = {}
            for r in db.query(
                "select f.* from feedback f join messages m on m.id = f.message_id"
                " where m.session_id = ? order by f.id",
                [session_id],
            ):
                ratings.setdefault(r["message_id"], []).append(FeedbackRecord.model_validate(r))
            entries = []
            for r in db.query(
                "select m.*, t.message_id as traced, t.skills_offered, t.skills_loaded,"
                " t.tools_used, t.completed, t.error, t.latency_ms, t.prompt_tokens,"
                " t.completion_tokens, t.model from messages m left join traces t"
                " on t.message_id = m.id where m.session_id = ? order by m.id",
                [session_id],
            ):
                entries.append(_entry(dict(r), ratings.get(r["id"], [])))
            return entries

        return await self.run(read)

    async def feedback_by_session(self, ids: Sequence[int]) -> dict[int, list[FeedbackRecord]]:
        """The ratings given in each of the sessions, in order."""
        wanted = list(ids)
        if not wanted:
            return {}
        marks = ", ".join("?" for _ in wanted)

        def read(db: Database) -> dict[int, list[FeedbackRecord]]:
            out: dict[int, list[FeedbackRecord]] = {}
            for r in db.query(
                "select f.*, m.session_id from feedback f join messages m on m.id = f.message_id"
                f" where m.session_id in ({marks}) order by f.id",
                wanted,
            ):
                row = dict(r)
                sid = row.pop("session_id")
                out.setdefault(sid, []).append(FeedbackRecord.model_validate(row))
            return out

        return await self.run(read)

    async def daily_ratings(self, since: float | None = None) -> list[DayRating]:
        """👍 and 👎 per UTC day of the rating, oldest day first."""
        where, params = ("where created_at >= ?", [since]) if since is not None else ("", [])
        sql = (
            "select date(created_at, 'unixepoch') as day, sum(rating > 0) as ups,"
            f" sum(rating < 0) as downs from feedback {where} group by day order by day"
        )
        return await self.run(
            lambda db: [DayRating.model_validate(dict(r)) for r in db.query(sql, params)]
        )

    async def latest_downvotes(self, limit: int = 20) -> list[Downvote]:
        """The newest 👎, with the answer and the question it followed."""
        sql = (
            "select f.*, m.session_id, m.text as answer, (select q.text from messages q"
            " where q.session_id = m.session_id and q.id < m.id and q.role = 'user'"
            " order by q.id desc limit 1) as question from feedback f"
            " join messages m on m.id = f.message_id where f.rating < 0"
            " order by f.updated_at desc, f.id desc limit ?"
        )

        def read(db: Database) -> list[Downvote]:
            out = []
            for r in db.query(sql, [limit]):
                row = dict(r)
                extra = {k: row.pop(k) for k in ("session_id", "answer", "question")}
                out.append(Downvote(feedback=FeedbackRecord.model_validate(row), **extra))
            return out

        return await self.run(read)

    async def review_queue(self, *, limit: int = 50, offset: int = 0) -> list[Proposal]:
        """Proposals with the pending ones first (oldest first), then the rest newest first."""
        sql = (
            "select * from proposals order by status = 'pending' desc,"
            " case when status = 'pending' then id else -id end limit ? offset ?"
        )
        return await self.run(
            lambda db: [_proposal(dict(r)) for r in db.query(sql, [limit, offset])]
        )

    async def count_proposals(self) -> int:
        """How many proposals there are."""
        row = await self.run(lambda db: one(db, "select count(*) as n from proposals"))
        return int(row["n"]) if row else 0

    async def skill_proposals(self, slug: str) -> list[Proposal]:
        """Every proposal that creates or changes `slug`, newest first."""
        return await self.run(
            lambda db: [
                _proposal(dict(r))
                for r in db.query(
                    "select * from proposals where coalesce(target, name) = ? order by id desc",
                    [slug],
                )
            ]
        )

    async def skill_versions(self, slug: str) -> list[SkillVersion]:
        """Texts of `slug` that approvals replaced, newest first."""
        return await self.run(
            lambda db: [
                SkillVersion.model_validate(dict(r))
                for r in db.query(
                    "select * from skill_versions where slug = ? order by id desc", [slug]
                )
            ]
        )


def _entry(row: dict[str, Any], feedback: list[FeedbackRecord]) -> TranscriptEntry:
    trace_cols = (
        "skills_offered",
        "skills_loaded",
        "tools_used",
        "completed",
        "error",
        "latency_ms",
        "prompt_tokens",
        "completion_tokens",
        "model",
    )
    traced = row.pop("traced")
    trace_row = {k: row.pop(k) for k in trace_cols}
    trace = None
    if traced is not None:
        for key in ("skills_offered", "skills_loaded", "tools_used"):
            trace_row[key] = json.loads(trace_row[key] or "[]")
        trace = Trace.model_validate(trace_row)
    message = MessageRecord.model_validate(decode_json_fields(row, "platform_message_ids"))
    return TranscriptEntry(message=message, trace=trace, feedback=feedback)
