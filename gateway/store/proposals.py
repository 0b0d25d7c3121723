"""Proposals, their decisions, tombstones and replaced skill versions.

A decision is a conditional UPDATE from the status the decider saw, checked by
its row count: whoever changes the row first wins, in every process.
"""

from __future__ import annotations

import json
from typing import Any

from sqlite_utils import Database

from gateway.core.records import SkillRecord
from gateway.skills.proposals import Candidate, Proposal, Rejection, SkillVersion
from gateway.store.base import QueriesBase, decode_json_fields, one

_CANDIDATE_FIELDS = tuple(Candidate.model_fields)


def _proposal(row: dict[str, Any]) -> Proposal:
    return Proposal.model_validate(decode_json_fields(row, "based_on"))


def _insert_rejection(db: Database, rejection: Rejection) -> None:
    row = rejection.model_dump(exclude={"id"})
    db.table("rejections").insert(row)


class ProposalQueries(QueriesBase):
    """Durable review state."""

    async def add_proposal(self, candidate: Candidate, run_id: int | None) -> Proposal:
        """Store a new pending proposal."""
        row = candidate.model_dump(include=set(_CANDIDATE_FIELDS))
        row["based_on"] = json.dumps(row["based_on"])

        def add(db: Database) -> Proposal:
            cur = db.execute(
                f"insert into proposals ({', '.join(row)}, run_id, status)"
                f" values ({', '.join('?' for _ in row)}, ?, 'pending')",
                [*row.values(), run_id],
            )
            found = one(db, "select * from proposals where id = ?", [cur.lastrowid])
            assert found is not None
            return _proposal(found)

        return await self.run(add)

    async def drop_proposal(self, proposal_id: int) -> None:
        """Forget a pending proposal whose staging failed, before anyone could see it."""
        await self.run(
            lambda db: db.execute(
                "delete from proposals where id = ? and status = 'pending'", [proposal_id]
            )
        )

    async def get_proposal(self, proposal_id: int) -> Proposal | None:
        """One proposal by id."""
        row = await self.run(
            lambda db: one(db, "select * from proposals where id = ?", [proposal_id])
        )
        return None if row is None else _proposal(row)

    async def list_proposals(
        self, status: str | None = None, *, limit: int = 100, offset: int = 0
    ) -> list[Proposal]:
        """Proposals newest first, optionally of one status."""
        where, params = ("where status = ?", [status]) if status else ("", [])
        return await self.run(
            lambda db: [
                _proposal(dict(r))
                for r in db.query(
                    f"select * from proposals {where} order by id desc limit ? offset ?",
                    [*params, limit, offset],
                )
            ]
        )

    async def pending_proposals(self) -> list[Proposal]:
        """Every proposal waiting for review, oldest first."""
        return await self.run(
            lambda db: [
                _proposal(dict(r))
                for r in db.query("select * from proposals where status = 'pending' order by id")
            ]
        )

    async def unfinished_promotions(self) -> list[Proposal]:
        """Approved proposals whose files or registry row were not finished (a crash)."""
        return await self.run(
            lambda db: [
                _proposal(dict(r))
                for r in db.query(
                    "select * from proposals where status in ('approved', 'applied')"
                    " and promoted_at is null order by id"
                )
            ]
        )

    async def last_promotions(self) -> dict[str, Proposal]:
        """The latest approved or applied proposal of each skill."""
        rows = await self.run(
            lambda db: [
                dict(r)
                for r in db.query(
                    "select * from proposals where id in (select max(id) from proposals"
                    " where status in ('approved', 'applied') group by coalesce(target, name))"
                )
            ]
        )
        return {p.slug: p for p in map(_proposal, rows)}

    async def transition(
        self,
        proposal_id: int,
        *,
        from_status: str,
        to_status: str,
        by: str | None,
        at: float | None,
        reason: str | None = None,
        tombstone: Rejection | None = None,
        record: SkillRecord | None = None,
    ) -> bool:
        """Move a proposal from the status the caller saw; False when someone moved it first.

        The tombstone and the registry row, when given, are written in the same transaction.
        """

        def move(db: Database) -> bool:
            with db.atomic():
                cur = db.execute(
                    "update proposals set status = ?, decided_by = ?, decided_at = ?,"
                    " reason = coalesce(?, reason) where id = ? and status = ?",
                    [to_status, by, at, reason, proposal_id, from_status],
                )
                if cur.rowcount != 1:
                    return False
                if tombstone is not None:
                    _insert_rejection(db, tombstone)
                if record is not None:
                    db.table("skills").upsert(record.model_dump(), pk="slug")
            return True

        return await self.run(move)

    async def set_rejection_reason(self, proposal_id: int, reason: str | None) -> bool:
        """Set the reason of a rejected proposal and of its tombstone; False if not rejected."""

        def update(db: Database) -> bool:
            with db.atomic():
                cur = db.execute(
                    "update proposals set reason = ? where id = ? and status = 'rejected'",
                    [reason, proposal_id],
                )
                if cur.rowcount != 1:
                    return False
                db.execute(
                    "update rejections set reason = ? where proposal_id = ?",
                    [reason, proposal_id],
                )
            return True

        return await self.run(update)

    async def mark_promoted(self, proposal_id: int, at: float, record: SkillRecord) -> None:
        """Record that an approved proposal is live, with its registry row, in one transaction."""

        def mark(db: Database) -> None:
            with db.atomic():
                db.execute("update proposals set promoted_at = ? where id = ?", [at, proposal_id])
                db.table("skills").upsert(record.model_dump(), pk="slug")

        await self.run(mark)

    async def rejections(self, limit: int | None = None) -> list[Rejection]:
        """Tombstones, newest first."""
        tail = "" if limit is None else f" limit {int(limit)}"
        return await self.run(
            lambda db: [
                Rejection.model_validate(dict(r))
                for r in db.query(f"select * from rejections order by id desc{tail}")
            ]
        )

    async def add_skill_version(
        self, slug: str, text: str, digest: str, proposal_id: int, at: float
    ) -> None:
        """Keep a live text an approval is about to replace."""
        await self.run(
            lambda db: db.execute(
                "insert into skill_versions (slug, content, content_hash, replaced_at, proposal_id)"
                " values (?, ?, ?, ?, ?)",
                [slug, text, digest, at, proposal_id],
            )
        )

    async def replaced_version(self, proposal_id: int) -> SkillVersion | None:
        """The live text the proposal replaced when it was approved."""
        row = await self.run(
            lambda db: one(
                db,
                "select * from skill_versions where proposal_id = ? order by id limit 1",
                [proposal_id],
            )
        )
        return None if row is None else SkillVersion.model_validate(row)
