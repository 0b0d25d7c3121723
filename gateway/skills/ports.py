"""What the synthesizer and the review operations need from the store, as protocols."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from gateway.core.records import SkillRecord
from gateway.skills.effect import EffectStore
from gateway.skills.evidence import EvidenceSource
from gateway.skills.files import SkillFiles
from gateway.skills.proposals import (
    Candidate,
    Proposal,
    Rejection,
    RunDropped,
    RunRecord,
    SkillVersion,
)


class ReviewStore(SkillFiles, Protocol):
    """Proposals, decisions, tombstones, replaced versions, registry rows, file records."""

    async def add_proposal(self, candidate: Candidate, run_id: int | None) -> Proposal: ...

    async def drop_proposal(self, proposal_id: int) -> None: ...

    async def get_proposal(self, proposal_id: int) -> Proposal | None: ...

    async def pending_proposals(self) -> list[Proposal]: ...

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
    ) -> bool: ...

    async def mark_promoted(self, proposal_id: int, at: float, record: SkillRecord) -> None: ...

    async def set_rejection_reason(self, proposal_id: int, reason: str | None) -> bool: ...

    async def reopen_proposal(
        self, proposal_id: int, by: str, at: float, reason: str | None
    ) -> bool: ...

    async def add_skill_version(
        self, slug: str, text: str, digest: str, proposal_id: int, at: float
    ) -> None: ...

    async def replaced_version(self, proposal_id: int) -> SkillVersion | None: ...

    async def get_skill_record(self, slug: str) -> SkillRecord | None: ...

    async def switch_skill(
        self, slug: str, enabled: bool, by: str, reason: str | None, at: float
    ) -> SkillRecord | None: ...


class RetireStore(EffectStore, Protocol):
    """What proposing retirements reads: tallies, exposures, open and refused proposals."""

    async def exposure_sessions(self, name: str, limit: int = 50) -> list[int]: ...

    async def pending_proposals(self) -> list[Proposal]: ...

    async def rejections(self, limit: int | None = None) -> list[Rejection]: ...

    async def skill_records(self) -> list[SkillRecord]: ...


class SynthesisStore(EvidenceSource, RetireStore, Protocol):
    """Evidence, consumed sessions, runs, the run lock, and what proposals are compared with."""

    async def finish_idle_sessions(self, now: float, idle_seconds: float) -> int: ...

    async def consume_sessions(
        self, session_ids: Sequence[int], run_id: int, at: float
    ) -> None: ...

    async def start_run(self, trigger: str, model: str | None, at: float) -> int: ...

    async def finish_run(self, run: RunRecord, dropped: Sequence[RunDropped] = ()) -> None: ...

    async def acquire_lock(self, name: str, holder: str, now: float, lease: float) -> bool: ...

    async def release_lock(self, name: str, holder: str) -> None: ...

    async def get_meta(self, key: str) -> str | None: ...

    async def set_meta(self, key: str, value: str) -> None: ...

    async def lock_holder(self, name: str, now: float) -> str | None: ...

    async def fail_interrupted_runs(self, now: float, error: str) -> int: ...
