"""What review needs from the store, as protocols, and the record of a card's copies."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pydantic import BaseModel

from gateway.core.ports import SkillFiles
from gateway.core.records import DeletedSession, SkillRecord
from gateway.review.cards import ReplacedVersions
from gateway.review.proposals import Candidate, Proposal, Rejection
from gateway.review.trials import TrialPair


class PendingProposals(Protocol):
    """The proposals waiting for a decision, oldest first."""

    async def pending_proposals(self) -> list[Proposal]: ...


class ReviewStore(SkillFiles, PendingProposals, ReplacedVersions, Protocol):
    """Proposals, decisions, tombstones, replaced versions, registry rows, file records."""

    async def add_proposal(
        self, candidate: Candidate, run_id: int | None, pairs: Sequence[TrialPair] = ()
    ) -> Proposal: ...

    async def drop_proposal(self, proposal_id: int) -> None: ...

    async def get_proposal(self, proposal_id: int) -> Proposal | None: ...

    async def proposal_and_skill(
        self, proposal_id: int
    ) -> tuple[Proposal, SkillRecord | None] | None: ...

    async def unfinished_promotions(self) -> list[Proposal]: ...

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
        name: str | None = None,
        redacted: str | None = None,
    ) -> Proposal | None: ...

    async def mark_promoted(
        self,
        proposal_id: int,
        at: float,
        record: SkillRecord,
        *,
        replaced: tuple[str, str] | None = None,
    ) -> None: ...

    async def set_rejection_reason(self, proposal_id: int, reason: str | None) -> bool: ...

    async def deleted_sessions(self, ids: Sequence[int]) -> dict[int, DeletedSession]: ...

    async def reopen_proposal(
        self, proposal_id: int, by: str, at: float, reason: str | None
    ) -> bool: ...

    async def get_skill_record(self, slug: str) -> SkillRecord | None: ...

    async def switch_skill(
        self, slug: str, enabled: bool, by: str, reason: str | None, at: float
    ) -> SkillRecord | None: ...


class CardDelivery(BaseModel):
    """One admin's copy of a proposal card."""

    proposal_id: int
    channel: str
    chat_id: str
    platform_message_id: str | None = None
    claimed_at: float
    delivered_at: float | None = None
    shown_status: str | None = None
    shown_reason: str | None = None


class CardLedger(Protocol):
    """Which chat holds a copy of which proposal card, and what it shows."""

    async def card_delivered(
        self,
        proposal_id: int,
        channel: str,
        chat_id: str,
        message_id: str | None,
        *,
        status: str,
        reason: str | None,
        now: float | None = None,
    ) -> None: ...
