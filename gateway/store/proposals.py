"""Proposals, their decisions, tombstones and replaced skill versions.

A decision is a conditional UPDATE from the status the decider saw, checked by
its row count: whoever changes the row first wins, in every process.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from gateway.core.records import SkillRecord
from gateway.review.proposals import Candidate, Proposal, Rejection, SkillVersion
from gateway.review.trials import TrialPair
from gateway.store.cards import remember_name
from gateway.store.registry import UPSERT_SKILL, skill_args, skill_record
from gateway.store.sql import (
    Conn,
    QueriesBase,
    decode_json_fields,
    insert_sql,
    marks,
    query,
    transaction,
)

_CANDIDATE_FIELDS = tuple(Candidate.model_fields)
_REJECTION_COLUMNS = tuple(f for f in Rejection.model_fields if f != "id")
_INSERT_REJECTION = insert_sql("rejections", _REJECTION_COLUMNS)
_INSERT_VERSION = insert_sql(
    "skill_versions", ("slug", "content", "content_hash", "replaced_at", "proposal_id")
)


_PAIR_COLUMNS = (
    "proposal_id",
    "side",
    "arm",
    "message_id",
    "rating",
    "comment",
    "question",
    "before_text",
    "after_text",
    "outcome",
    "why",
)
_INSERT_PAIR = insert_sql("trial_pairs", _PAIR_COLUMNS)


async def redact(c: Conn, ids: Sequence[int], text: str) -> None:
    """Replace the words of these proposals (description, content, rationale, diff,
    statement) and of the repeat notices naming them by `text`, and delete their trial's
    pairs (the questions and answers it replayed); the rows stay, as a record of the
    decision, with the trial's counts."""
    if not ids:
        return
    wanted = list(ids)
    at = marks(wanted)
    await c.execute(
        "update proposals set description = ?, content = ?, rationale = '', change_text = '',"
        f" statement = null where id in ({at})",
        text,
        text,
        *wanted,
    )
    await c.execute(
        f"update repeat_notice_items set description = ?, content = ? where proposal_id in ({at})",
        text,
        text,
        *wanted,
    )
    await c.execute(f"delete from trial_pairs where proposal_id in ({at})", *wanted)


def proposal_record(row: dict[str, Any]) -> Proposal:
    """A proposals row as a record."""
    return Proposal.model_validate(
        decode_json_fields(row, "based_on", "allowed_tools", "possibly_same", "files", "trial")
    )


def pair_record(row: dict[str, Any]) -> TrialPair:
    """A trial_pairs row as a record."""
    return TrialPair(
        side=row["side"],
        arm=row["arm"],
        message_id=row["message_id"],
        rating=row["rating"],
        comment=row["comment"],
        question=row["question"],
        before=row["before_text"],
        after=row["after_text"],
        outcome=row["outcome"],
        why=row["why"],
    )


def _rejection_args(rejection: Rejection) -> list[Any]:
    row = rejection.model_dump(exclude={"id"})
    return [row[c] for c in _REJECTION_COLUMNS]


class ProposalQueries(QueriesBase):
    """Durable review state."""

    @transaction
    async def add_proposal(
        self,
        c: Conn,
        candidate: Candidate,
        run_id: int | None,
        pairs: Sequence[TrialPair] = (),
    ) -> Proposal:
        """Store a new pending proposal, with the pairs of its trial, in one transaction."""
        row = candidate.model_dump(include=set(_CANDIDATE_FIELDS))
        row["based_on"] = json.dumps(row["based_on"])
        row["allowed_tools"] = json.dumps(row["allowed_tools"])
        row["possibly_same"] = json.dumps(row["possibly_same"])
        row["files"] = json.dumps(row["files"])
        row["trial"] = None if candidate.trial is None else candidate.trial.model_dump_json()
        found = await c.fetchrow(
            insert_sql("proposals", [*row, "run_id", "status"], "returning *"),
            *row.values(),
            run_id,
            "pending",
        )
        assert found is not None
        if pairs:
            await c.executemany(
                _INSERT_PAIR,
                [
                    (
                        found["id"],
                        p.side,
                        p.arm,
                        p.message_id,
                        p.rating,
                        p.comment,
                        p.question,
                        p.before,
                        p.after,
                        p.outcome,
                        p.why,
                    )
                    for p in pairs
                ],
            )
        return proposal_record(found)

    @query
    async def trial_pairs(self, c: Conn, proposal_id: int) -> list[TrialPair]:
        """The pairs of a proposal's trial, in the order they were tried."""
        rows = await c.fetch(
            "select * from trial_pairs where proposal_id = ? order by id", proposal_id
        )
        return [pair_record(r) for r in rows]

    @transaction
    async def drop_proposal(self, c: Conn, proposal_id: int) -> None:
        """Forget a pending proposal whose staging failed, before anyone could see it."""
        found = await c.fetchrow(
            "select id from proposals where id = ? and status = 'pending'", proposal_id
        )
        if found is None:
            return
        await c.execute("delete from trial_pairs where proposal_id = ?", proposal_id)
        await c.execute("delete from proposals where id = ?", proposal_id)

    @query
    async def get_proposal(self, c: Conn, proposal_id: int) -> Proposal | None:
        """One proposal by id."""
        row = await c.fetchrow("select * from proposals where id = ?", proposal_id)
        return None if row is None else proposal_record(row)

    @query
    async def proposal_and_skill(
        self, c: Conn, proposal_id: int
    ) -> tuple[Proposal, SkillRecord | None] | None:
        """One proposal by id with the registry row of its skill, for a decision."""
        row = await c.fetchrow("select * from proposals where id = ?", proposal_id)
        if row is None:
            return None
        p = proposal_record(row)
        return p, await skill_record(c, p.slug)

    @query
    async def run_proposals(self, c: Conn, run_id: int) -> list[Proposal]:
        """The proposals one synthesis run made, in the order it made them."""
        rows = await c.fetch("select * from proposals where run_id = ? order by id", run_id)
        return [proposal_record(r) for r in rows]

    @query
    async def list_proposals(
        self, c: Conn, status: str | None = None, *, limit: int = 100, offset: int = 0
    ) -> list[Proposal]:
        """Proposals newest first, optionally of one status."""
        where, params = ("where status = ?", [status]) if status else ("", [])
        rows = await c.fetch(
            f"select * from proposals {where} order by id desc limit ? offset ?",
            *params,
            c.dialect.limit(limit),
            max(int(offset), 0),
        )
        return [proposal_record(r) for r in rows]

    @query
    async def pending_proposals(self, c: Conn) -> list[Proposal]:
        """Every proposal waiting for review, oldest first."""
        rows = await c.fetch("select * from proposals where status = 'pending' order by id")
        return [proposal_record(r) for r in rows]

    @query
    async def unfinished_promotions(self, c: Conn) -> list[Proposal]:
        """Approved proposals whose files or registry row were not finished (a crash)."""
        rows = await c.fetch(
            "select * from proposals where status in ('approved', 'applied')"
            " and promoted_at is null order by id"
        )
        return [proposal_record(r) for r in rows]

    @query
    async def last_promotions(self, c: Conn) -> dict[str, Proposal]:
        """The latest approved or applied proposal of each skill."""
        rows = await c.fetch(
            "select * from proposals where id in (select max(id) from proposals"
            " where status in ('approved', 'applied') group by coalesce(target, name))"
            " order by id"
        )
        return {p.slug: p for p in map(proposal_record, rows)}

    @transaction
    async def transition(
        self,
        c: Conn,
        proposal_id: int,
        *,
        from_status: str,
        to_status: str,
        by: str | None,
        at: float | None,
        reason: str | None = None,
        tombstone: Rejection | None = None,
        record: SkillRecord | None = None,
        name: str | None = None,
        redacted: str | None = None,
    ) -> Proposal | None:
        """Move a proposal from the status the caller saw: the proposal as it is now, or None
        when someone moved it first.

        The tombstone, the registry row and how the decider is shown (`name`), when given,
        are written in the same transaction. With `redacted`, the proposal's words (its
        description, content, rationale and diff, and those of the repeat notices that name
        it) are replaced by that text: the decision stays, as a record without the words.
        """
        row = await c.fetchrow(
            "update proposals set status = ?, decided_by = ?, decided_at = ?,"
            " reason = coalesce(?, reason) where id = ? and status = ? returning *",
            to_status,
            by,
            at,
            reason,
            proposal_id,
            from_status,
        )
        if row is None:
            return None
        if redacted is not None:
            await redact(c, [proposal_id], redacted)
            row = await c.fetchrow("select * from proposals where id = ?", proposal_id)
            assert row is not None
        if tombstone is not None:
            await c.execute(_INSERT_REJECTION, *_rejection_args(tombstone))
        if record is not None:
            await c.execute(UPSERT_SKILL, *skill_args(record))
        if name is not None and by is not None:
            await remember_name(c, by, name, time.time() if at is None else at)
        return proposal_record(row)

    @transaction
    async def set_rejection_reason(self, c: Conn, proposal_id: int, reason: str | None) -> bool:
        """Set the reason of a rejected proposal and of its tombstone; False if not rejected."""
        changed = await c.execute(
            "update proposals set reason = ? where id = ? and status = 'rejected'",
            reason,
            proposal_id,
        )
        if changed != 1:
            return False
        await c.execute(
            "update rejections set reason = ? where proposal_id = ?", reason, proposal_id
        )
        return True

    @transaction
    async def reopen_proposal(
        self, c: Conn, proposal_id: int, by: str, at: float, reason: str | None
    ) -> bool:
        """Pending again, its tombstone stood down; False unless the proposal was rejected."""
        changed = await c.execute(
            "update proposals set status = 'pending', decided_by = null, decided_at = null,"
            " reopened_by = ?, reopened_at = ?, reopen_reason = ?"
            " where id = ? and status = 'rejected'",
            by,
            at,
            reason,
            proposal_id,
        )
        if changed != 1:
            return False
        await c.execute(
            "update rejections set reopened_by = ?, reopened_at = ?, reopen_reason = ?"
            " where proposal_id = ? and reopened_at is null",
            by,
            at,
            reason,
            proposal_id,
        )
        return True

    @transaction
    async def mark_promoted(
        self,
        c: Conn,
        proposal_id: int,
        at: float,
        record: SkillRecord,
        *,
        replaced: tuple[str, str] | None = None,
    ) -> None:
        """Record that an approved proposal is live, with its registry row and the text it
        replaced (with that text's hash), in one transaction."""
        await c.execute("update proposals set promoted_at = ? where id = ?", at, proposal_id)
        await c.execute(UPSERT_SKILL, *skill_args(record))
        if replaced is not None:
            await _add_version(c, record.slug, *replaced, proposal_id, at)

    @query
    async def rejections(self, c: Conn, limit: int | None = None) -> list[Rejection]:
        """Tombstones still standing (not reopened), newest first."""
        rows = await c.fetch(
            "select * from rejections where reopened_at is null order by id desc limit ?",
            c.dialect.limit(-1 if limit is None else limit),
        )
        return [Rejection.model_validate(r) for r in rows]

    @query
    async def replaced_version(self, c: Conn, proposal_id: int) -> SkillVersion | None:
        """The live text the proposal replaced when it was approved."""
        row = await c.fetchrow(
            "select * from skill_versions where proposal_id = ? order by id limit 1",
            proposal_id,
        )
        return None if row is None else SkillVersion.model_validate(row)


async def _add_version(
    c: Conn, slug: str, text: str, digest: str, proposal_id: int, at: float
) -> None:
    await c.execute(_INSERT_VERSION, slug, text, digest, at, proposal_id)
