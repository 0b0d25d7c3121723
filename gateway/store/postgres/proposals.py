"""Proposals on PostgreSQL: their decisions, tombstones and replaced skill versions.

A decision is a conditional UPDATE from the status the decider saw, checked by
its row count: whoever changes the row first wins, in every process.
"""

from __future__ import annotations

import json
from typing import Any

from gateway.core.records import SkillRecord
from gateway.skills.proposals import Candidate, Proposal, Rejection, SkillVersion
from gateway.store.postgres.base import PgQueriesBase, affected
from gateway.store.proposals import _CANDIDATE_FIELDS, _proposal

_SKILL_COLUMNS = tuple(SkillRecord.model_fields)
_UPSERT_SKILL = (
    f"insert into skills ({', '.join(_SKILL_COLUMNS)})"
    f" values ({', '.join(f'${i}' for i in range(1, len(_SKILL_COLUMNS) + 1))})"
    " on conflict (slug) do update set "
    + ", ".join(f"{c} = excluded.{c}" for c in _SKILL_COLUMNS if c != "slug")
)
_REJECTION_COLUMNS = tuple(f for f in Rejection.model_fields if f != "id")
_INSERT_REJECTION = (
    f"insert into rejections ({', '.join(_REJECTION_COLUMNS)})"
    f" values ({', '.join(f'${i}' for i in range(1, len(_REJECTION_COLUMNS) + 1))})"
)


def _rejection_args(rejection: Rejection) -> list[Any]:
    row = rejection.model_dump(exclude={"id"})
    return [row[c] for c in _REJECTION_COLUMNS]


def _skill_args(record: SkillRecord) -> list[Any]:
    """A registry row's values for `_UPSERT_SKILL` (the trigger keeps `content_since`)."""
    row = record.model_dump()
    row["enabled"] = int(row["enabled"])
    return [row[c] for c in _SKILL_COLUMNS]


def _limit(limit: int | None) -> int | None:
    """SQLite reads a negative LIMIT as no limit; PostgreSQL refuses one."""
    return None if limit is None or limit < 0 else int(limit)


class PgProposalQueries(PgQueriesBase):
    """Durable review state."""

    async def add_proposal(self, candidate: Candidate, run_id: int | None) -> Proposal:
        """Store a new pending proposal."""
        row = candidate.model_dump(include=set(_CANDIDATE_FIELDS))
        row["based_on"] = json.dumps(row["based_on"])
        marks = ", ".join(f"${i}" for i in range(1, len(row) + 2))
        found = await self._fetchrow(
            f"insert into proposals ({', '.join(row)}, run_id, status)"
            f" values ({marks}, 'pending') returning *",
            *row.values(),
            run_id,
        )
        assert found is not None
        return _proposal(found)

    async def drop_proposal(self, proposal_id: int) -> None:
        """Forget a pending proposal whose staging failed, before anyone could see it."""
        await self._execute(
            "delete from proposals where id = $1 and status = 'pending'", proposal_id
        )

    async def get_proposal(self, proposal_id: int) -> Proposal | None:
        """One proposal by id."""
        row = await self._fetchrow("select * from proposals where id = $1", proposal_id)
        return None if row is None else _proposal(row)

    async def list_proposals(
        self, status: str | None = None, *, limit: int = 100, offset: int = 0
    ) -> list[Proposal]:
        """Proposals newest first, optionally of one status."""
        window = (_limit(limit), max(int(offset), 0))
        if status:
            rows = await self._fetch(
                "select * from proposals where status = $1 order by id desc limit $2 offset $3",
                status,
                *window,
            )
        else:
            rows = await self._fetch(
                "select * from proposals order by id desc limit $1 offset $2", *window
            )
        return [_proposal(r) for r in rows]

    async def pending_proposals(self) -> list[Proposal]:
        """Every proposal waiting for review, oldest first."""
        rows = await self._fetch("select * from proposals where status = 'pending' order by id")
        return [_proposal(r) for r in rows]

    async def unfinished_promotions(self) -> list[Proposal]:
        """Approved proposals whose files or registry row were not finished (a crash)."""
        rows = await self._fetch(
            "select * from proposals where status in ('approved', 'applied')"
            " and promoted_at is null order by id"
        )
        return [_proposal(r) for r in rows]

    async def last_promotions(self) -> dict[str, Proposal]:
        """The latest approved or applied proposal of each skill."""
        rows = await self._fetch(
            "select * from proposals where id in (select max(id) from proposals"
            " where status in ('approved', 'applied') group by coalesce(target, name))"
            " order by id"
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
        async with self._tx() as conn:
            status = await conn.execute(
                "update proposals set status = $1, decided_by = $2, decided_at = $3,"
                " reason = coalesce($4, reason) where id = $5 and status = $6",
                to_status,
                by,
                at,
                reason,
                proposal_id,
                from_status,
            )
            if affected(status) != 1:
                return False
            if tombstone is not None:
                await conn.execute(_INSERT_REJECTION, *_rejection_args(tombstone))
            if record is not None:
                await conn.execute(_UPSERT_SKILL, *_skill_args(record))
        return True

    async def set_rejection_reason(self, proposal_id: int, reason: str | None) -> bool:
        """Set the reason of a rejected proposal and of its tombstone; False if not rejected."""
        async with self._tx() as conn:
            status = await conn.execute(
                "update proposals set reason = $1 where id = $2 and status = 'rejected'",
                reason,
                proposal_id,
            )
            if affected(status) != 1:
                return False
            await conn.execute(
                "update rejections set reason = $1 where proposal_id = $2", reason, proposal_id
            )
        return True

    async def mark_promoted(self, proposal_id: int, at: float, record: SkillRecord) -> None:
        """Record that an approved proposal is live, with its registry row, in one transaction."""
        async with self._tx() as conn:
            await conn.execute(
                "update proposals set promoted_at = $1 where id = $2", at, proposal_id
            )
            await conn.execute(_UPSERT_SKILL, *_skill_args(record))

    async def rejections(self, limit: int | None = None) -> list[Rejection]:
        """Tombstones, newest first."""
        rows = await self._fetch(
            "select * from rejections order by id desc limit $1", _limit(limit)
        )
        return [Rejection.model_validate(r) for r in rows]

    async def add_skill_version(
        self, slug: str, text: str, digest: str, proposal_id: int, at: float
    ) -> None:
        """Keep a live text an approval is about to replace."""
        await self._execute(
            "insert into skill_versions (slug, content, content_hash, replaced_at, proposal_id)"
            " values ($1, $2, $3, $4, $5)",
            slug,
            text,
            digest,
            at,
            proposal_id,
        )

    async def replaced_version(self, proposal_id: int) -> SkillVersion | None:
        """The live text the proposal replaced when it was approved."""
        row = await self._fetchrow(
            "select * from skill_versions where proposal_id = $1 order by id limit 1",
            proposal_id,
        )
        return None if row is None else SkillVersion.model_validate(row)
