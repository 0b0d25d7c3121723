"""What the synthesizer and retirement need from the store, as protocols."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from gateway.core.ports import Meta, SkillRecords
from gateway.review.ports import PendingProposals
from gateway.review.proposals import Rejection
from gateway.review.repeats import RejectedRepeat
from gateway.skills.effect import EffectStore, SkillTallies
from gateway.synthesis.calibration import Calibrations
from gateway.synthesis.runs import RunCheck, RunDropped, RunRecord
from gateway.synthesis.trial import TrialStore


class Locks(Protocol):
    """Leased named locks, one holder at a time across replicas (the synthesis pass, the
    alert watcher)."""

    async def acquire_lock(self, name: str, holder: str, now: float, lease: float) -> bool: ...

    async def release_lock(self, name: str, holder: str) -> None: ...


class RetireStore(EffectStore, PendingProposals, SkillRecords, Protocol):
    """What proposing retirements reads, tallies, exposures, open and refused proposals,
    and where the looks of the retirement test are recorded."""

    async def record_looks(self, looks: Sequence[SkillTallies], at: float) -> None: ...

    async def exposure_sessions(self, name: str, limit: int = 50) -> list[int]: ...

    async def rejections(self, limit: int | None = None) -> list[Rejection]: ...


class SynthesisStore(TrialStore, RetireStore, Locks, Meta, Calibrations, Protocol):
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

    async def lock_holder(self, name: str, now: float) -> str | None: ...

    async def fail_interrupted_runs(self, now: float, error: str) -> int: ...

    async def learning_tokens(self, since: float) -> int: ...
