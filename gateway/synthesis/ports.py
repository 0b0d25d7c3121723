"""What the synthesizer and retirement need from the store, as protocols."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from gateway.core.records import SkillRecord
from gateway.review.proposals import Proposal, Rejection
from gateway.review.repeats import RejectedRepeat
from gateway.skills.effect import EffectStore, SkillTallies
from gateway.synthesis.evidence import EvidenceSource
from gateway.synthesis.runs import RunCheck, RunDropped, RunRecord


class RetireStore(EffectStore, Protocol):
    """What proposing retirements reads, tallies, exposures, open and refused proposals,
    and where the looks of the retirement test are recorded."""

    async def record_looks(self, looks: Sequence[SkillTallies], at: float) -> None: ...

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

    async def note_showings(self, session_ids: Sequence[int], at: float) -> None: ...

    async def start_run(self, trigger: str, model: str | None, at: float) -> int: ...

    async def finish_run(
        self,
        run: RunRecord,
        dropped: Sequence[RunDropped] = (),
        checks: Sequence[RunCheck] = (),
        repeats: Sequence[RejectedRepeat] = (),
    ) -> None: ...

    async def acquire_lock(self, name: str, holder: str, now: float, lease: float) -> bool: ...

    async def release_lock(self, name: str, holder: str) -> None: ...

    async def get_meta(self, key: str) -> str | None: ...

    async def set_meta(self, key: str, value: str) -> None: ...

    async def lock_holder(self, name: str, now: float) -> str | None: ...

    async def fail_interrupted_runs(self, now: float, error: str) -> int: ...
