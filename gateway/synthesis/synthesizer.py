"""The synthesizer: one pass from unconsumed finished sessions to screened, staged proposals.

Evidence accumulates: a shown session that nothing came of stays eligible for later
passes while it is younger than the evidence window, so complaints days apart meet in
one batch; a session is consumed once a proposal (or a suppressed repeat of a known
claim) was based on it, so no evidence a rejection answered is proposed from again.

A pass holds a leased lock row, so two passes never overlap, in one process or
several, and a crashed holder blocks nobody for longer than the lease. Each
batch is one JSON-mode model call; its sessions are consumed once the answer
was used, so a restart neither repeats nor loses them. A batch whose answer is
not the agreed JSON ends the run as failed, stages nothing and leaves its
sessions for the next pass; after BATCH_ATTEMPTS such answers in a row the
batch is recorded in the run's error and skipped (consumed), so one batch a
model cannot answer is not re-sent forever. Each pass first measures every skill's effect on
ratings and proposes retiring the harmful ones (see `effect` and `retire`);
retirements do not count against the per-pass proposal limit.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, Field

from gateway.core.embeddings import Embedder
from gateway.core.fence import new_tag
from gateway.core.llm import LLM
from gateway.core.tools import ToolDirectory
from gateway.errors import ModelError, SkillError, SynthesisError
from gateway.review.proposals import Proposal
from gateway.review.reviewer import Reviewer
from gateway.skills.catalog import SkillCatalog
from gateway.skills.effect import (
    EffectThresholds,
    SkillEffect,
    settled,
    short_of_comparison,
    skill_effects,
)
from gateway.skills.live import load_live
from gateway.synthesis.answer import SynthesisAnswer, parse_answer
from gateway.synthesis.budget import Budget, fit
from gateway.synthesis.evidence import Batch, batches
from gateway.synthesis.ports import SynthesisStore
from gateway.synthesis.prompt import build_messages
from gateway.synthesis.retire import propose_retirements
from gateway.synthesis.runs import RunDropped, RunRecord
from gateway.synthesis.sameness import Known, SameClaim, SameClaimConfig
from gateway.synthesis.screening import (
    Dropped,
    ScreenContext,
    live_claim,
    repeat_of,
    safe_label,
    screen,
    sources,
)

log = logging.getLogger(__name__)
LOCK_NAME = "synthesis"
BATCH_ATTEMPTS = 3
FAILED_BATCH_KEY = "synthesis.failed_batch"
ANSWER_SCHEMA = SynthesisAnswer.model_json_schema()


_BOOT = uuid.uuid4().hex[:8]
"""This process's start: a lock holder with our pid but another start is a dead predecessor."""
INTERRUPTED = "interrupted: the process running this pass stopped before it finished"


def holder_dead(holder: str) -> bool:
    """True when a lock holder is a process on this machine that no longer runs.

    A holder is `host:pid:start:pass`. Holders on other machines are never judged
    (their lease still ends them); neither is a pid this user may not signal.
    """
    host, _, rest = holder.partition(":")
    pid_text, _, rest = rest.partition(":")
    start = rest.partition(":")[0] if rest.count(":") >= 1 else None
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return start is not None and start != _BOOT
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError):
        return False
    return False


@dataclass(frozen=True)
class SynthesisConfig:
    """The synthesizer's knobs, from Settings."""

    max_proposals: int = 3
    similarity_threshold: float = 0.85
    batch_sessions: int = 20
    batch_tokens: int = 6000
    max_skill_bytes: int = 16_384
    session_idle_seconds: float = 1800.0
    secrets: Sequence[str] = ()
    lease_seconds: float = 900.0
    effect: EffectThresholds = field(default_factory=EffectThresholds)
    embedding_threshold: float = 0.9
    ask_margin: float = 0.25
    evidence_window_seconds: float = 14 * 86400.0
    """How long a shown session not yet acted on stays eligible; 0: every session is read once."""
    context_tokens: int | None = None
    """The model's context, when known: batches and answers are sized to fit it."""

    @property
    def budget(self) -> Budget:
        return fit(self.context_tokens, self.batch_tokens, self.max_proposals, self.max_skill_bytes)


class ProposalBrief(BaseModel):
    """A proposal made by a run."""

    id: int
    kind: str
    name: str
    target: str | None
    description: str
    status: str


class DroppedBrief(BaseModel):
    """A proposal a run did not stage, and why (a repeat: what it matched, and how)."""

    name: str
    reason: str
    matched: int | None = None
    matched_skill: str | None = None
    detail: str | None = None


class BatchReport(BaseModel):
    """Progress: a batch about to be asked (`finished` false), or one done."""

    index: int
    sessions: int
    skipped: int
    proposed: int = 0
    suppressed: int = 0
    refused: int = 0
    finished: bool = True


class RunSummary(BaseModel):
    """What a pass did: proposals made, suppressed and refused, its counts and its error."""

    run_id: int | None = None
    status: Literal["ok", "failed", "busy"]
    trigger: str
    sessions: int = 0
    skipped: int = 0
    batches: int = 0
    proposed: list[ProposalBrief] = Field(default_factory=list)
    suppressed: list[DroppedBrief] = Field(default_factory=list)
    refused: list[DroppedBrief] = Field(default_factory=list)
    model: str | None = None
    prompt_tokens: int = 0
    error: str | None = None


Progress = Callable[[BatchReport], None]


class Synthesizer:
    """Reads evidence, asks the model, screens and hands survivors to review."""

    def __init__(
        self,
        store: SynthesisStore,
        llm: LLM,
        catalog: SkillCatalog,
        reviewer: Reviewer,
        config: SynthesisConfig,
        *,
        clock: Callable[[], float] = time.time,
        embedder: Embedder | None = None,
    ) -> None:
        self.store = store
        self.llm = llm
        self.catalog = catalog
        self.reviewer = reviewer
        self.config = config
        self.clock = clock
        self.embedder = embedder
        self.tools: ToolDirectory | None = None
        """The live tools and their policies, listed in the prompt (None: no tools)."""
        self.same = SameClaim(
            SameClaimConfig(
                threshold=config.similarity_threshold,
                embedding_threshold=config.embedding_threshold,
                ask_margin=config.ask_margin,
            ),
            embedder=embedder,
            adjudicator=llm,
        )

    async def run(self, trigger: str = "manual", progress: Progress | None = None) -> RunSummary:
        """One pass now; `busy` when another pass holds the lock."""
        # One holder per pass, so a second pass in this process is kept out too.
        holder = f"{socket.gethostname()}:{os.getpid()}:{_BOOT}:{uuid.uuid4().hex[:12]}"
        lease = self.config.lease_seconds
        if not await self.store.acquire_lock(LOCK_NAME, holder, self.clock(), lease):
            current = await self.store.lock_holder(LOCK_NAME, self.clock())
            if current is None or not holder_dead(current):
                return RunSummary(status="busy", trigger=trigger, error="another pass is running")
            log.warning("the synthesis lock's holder %s is gone; taking the lock over", current)
            await self.store.release_lock(LOCK_NAME, current)
            if not await self.store.acquire_lock(LOCK_NAME, holder, self.clock(), lease):
                return RunSummary(status="busy", trigger=trigger, error="another pass is running")
        try:
            return await self._run(trigger, progress, holder)
        finally:
            await self.store.release_lock(LOCK_NAME, holder)

    async def _run(self, trigger: str, progress: Progress | None, holder: str) -> RunSummary:
        cfg = self.config
        now = self.clock()
        # We hold the lock, so a run still marked running belongs to a pass that died.
        if stale := await self.store.fail_interrupted_runs(now, INTERRUPTED):
            log.warning("%d synthesis run(s) were interrupted and are now marked failed", stale)
        await self.store.finish_idle_sessions(now, cfg.session_idle_seconds)
        run = RunRecord(
            id=await self.store.start_run(trigger, self.llm.model, now),
            trigger=trigger,
            started_at=now,
            model=self.llm.model,
        )
        summary = RunSummary(run_id=run.id, status="ok", trigger=trigger, model=self.llm.model)
        try:
            await self._retirements(run, summary)
            window = cfg.evidence_window_seconds
            async for batch in batches(
                self.store,
                max_sessions=cfg.batch_sessions,
                max_tokens=cfg.budget.batch_tokens,
                tag=new_tag(),  # unguessable by chat text written before this pass
                since=now - window if window > 0 else None,
            ):
                if _drafted(summary) >= cfg.max_proposals:
                    break  # what is left stays unconsumed for the next pass
                before = (len(summary.proposed), len(summary.suppressed), len(summary.refused))
                consumed = batch.consumed_ids
                if batch.sessions:
                    summary.batches += 1
                    if progress is not None:  # a slow model: say what it is working on
                        started = BatchReport(
                            index=summary.batches,
                            sessions=len(batch.sessions),
                            skipped=len(batch.skipped),
                            finished=False,
                        )
                        progress(started)
                    try:
                        acted = await self._batch(batch, run, summary)
                    except SynthesisError as exc:
                        await self._unusable(batch, exc, summary)  # re-raises until skipped
                    else:
                        await self.store.set_meta(FAILED_BATCH_KEY, "{}")
                        if window > 0:
                            # Evidence nothing came of yet stays for later passes (see evidence).
                            consumed = [*batch.skipped, *(i for i in batch.shown_ids if i in acted)]
                await self.store.consume_sessions(consumed, run.id, self.clock())
                summary.sessions += len(batch.sessions)
                summary.skipped += len(batch.skipped)
                if not await self.store.acquire_lock(
                    LOCK_NAME, holder, self.clock(), cfg.lease_seconds
                ):
                    raise SynthesisError("the run lock's lease ran out and another pass took it")
                if progress is not None and batch.sessions:
                    progress(_report(summary, before, len(batch.sessions), len(batch.skipped)))
        except (SynthesisError, ModelError, SkillError) as exc:
            summary.status, summary.error = "failed", str(exc)
        except asyncio.CancelledError:
            summary.status, summary.error = "failed", "interrupted by shutdown"
            await self._finish(run, summary)
            raise
        except Exception as exc:
            # A bug must not take the scheduler down; the run record says what happened.
            log.exception("synthesis run %s failed", run.id)
            summary.status, summary.error = "failed", f"internal error: {type(exc).__name__}"
        await self._finish(run, summary)
        return summary

    async def _finish(self, run: RunRecord, summary: RunSummary) -> None:
        summary.prompt_tokens = run.prompt_tokens
        await self.store.finish_run(
            run.model_copy(
                update={
                    "status": summary.status,
                    "finished_at": self.clock(),
                    "sessions": summary.sessions,
                    "skipped": summary.skipped,
                    "batches": summary.batches,
                    "proposed": len(summary.proposed),
                    "suppressed": len(summary.suppressed),
                    "refused": len(summary.refused),
                    "error": summary.error,
                }
            ),
            [
                *(RunDropped(kind="suppressed", **d.model_dump()) for d in summary.suppressed),
                *(RunDropped(kind="refused", **d.model_dump()) for d in summary.refused),
            ],
        )
        log.info(
            "synthesis run %s %s: %d session(s), %d proposed, %d suppressed, %d refused%s",
            run.id,
            summary.status,
            summary.sessions,
            len(summary.proposed),
            len(summary.suppressed),
            len(summary.refused),
            f" ({summary.error})" if summary.error else "",
        )

    async def effects(self) -> dict[str, SkillEffect]:
        """Every registered skill's effect on ratings, judged with this synthesizer's thresholds."""
        return await skill_effects(self.store, self.config.effect)

    async def _retirements(self, run: RunRecord, summary: RunSummary) -> None:
        """Measure every skill; propose retiring the harmful ones; end holdout for settled ones."""
        effects = await self.effects()
        done = await propose_retirements(
            self.store,
            self.catalog.library,
            self.reviewer,
            effects,
            self.config.effect,
            run_id=run.id,
            now=self.clock(),
        )
        summary.proposed.extend(_brief(p) for p in done.proposed)
        summary.suppressed.extend(_dropped_brief(d) for d in done.dropped)
        self.settle(effects)

    def settle(self, effects: dict[str, SkillEffect]) -> None:
        """Tell the catalog which skills need no more holdout and whose comparison lags."""
        th = self.config.effect
        self.catalog.settle(settled(effects, th), short_of_comparison(effects, th))

    async def _unusable(self, batch: Batch, exc: SynthesisError, summary: RunSummary) -> None:
        """Count an unusable answer for this batch; skip the batch at the limit, else fail."""
        try:
            seen = json.loads(await self.store.get_meta(FAILED_BATCH_KEY) or "{}")
        except json.JSONDecodeError:
            seen = {}
        ids = set(batch.shown_ids)
        same = isinstance(seen, dict) and ids & set(seen.get("ids", []))
        attempts = int(seen.get("attempts", 0)) + 1 if same else 1
        if attempts < BATCH_ATTEMPTS:
            record = {"ids": sorted(ids), "attempts": attempts}
            await self.store.set_meta(FAILED_BATCH_KEY, json.dumps(record))
            raise SynthesisError(f"{exc} (attempt {attempts} of {BATCH_ATTEMPTS})") from exc
        await self.store.set_meta(FAILED_BATCH_KEY, "{}")
        note = f"skipped a batch of {len(ids)} session(s) after {attempts} unusable answers: {exc}"
        log.warning("synthesis %s", note)
        summary.error = note if summary.error is None else f"{summary.error}; {note}"

    async def _batch(self, batch: Batch, run: RunRecord, summary: RunSummary) -> set[int]:
        """Ask the model about one batch, screen and submit what it proposed.

        Returns the sessions acted on: sources of a staged proposal or of a repeat of a
        rejection, a pending proposal or a live skill (their evidence has its answer).
        """
        cfg = self.config
        pending = await self.store.pending_proposals()
        rejections = await self.store.rejections()
        messages = build_messages(
            batch,
            self.catalog,
            pending,
            rejections,
            max_proposals=cfg.max_proposals - _drafted(summary),
            max_bytes=cfg.max_skill_bytes,
            tools=self.tools.directory() if self.tools is not None else (),
        )
        completion = await self.llm.complete(
            messages,
            json_mode=True,
            json_schema=ANSWER_SCHEMA,
            max_tokens=cfg.budget.answer_tokens,
            retry_timeouts=True,  # nobody waits on a pass; a slow model deserves a second try
        )
        run.prompt_tokens += completion.prompt_tokens
        run.completion_tokens += completion.completion_tokens
        try:
            drafts = parse_answer(completion.text)  # nothing is staged unless all of it parses
        except SynthesisError as exc:
            if completion.finish_reason == "length":
                limit = cfg.budget.cut(completion.prompt_tokens, completion.completion_tokens)
                raise SynthesisError(f"the model's answer was {limit}: {exc}") from exc
            raise
        origins = {r.slug: r.source for r in await self.store.skill_records()}
        library = self.catalog.library
        ctx = ScreenContext(
            shown=batch.shown_ids,
            live=lambda slug: load_live(library, slug, origins.get(slug)),
            pending=pending,
            rejections=rejections,
            threshold=cfg.similarity_threshold,
            max_bytes=cfg.max_skill_bytes,
            secrets=cfg.secrets,
            model=completion.model or self.llm.model,
            now=self.clock(),
            same=self.same,
            live_skills=self._live_claims(),
            tools=frozenset(t.name for t in self.tools.directory()) if self.tools else frozenset(),
        )
        acted: set[int] = set()
        for draft in drafts:
            if _drafted(summary) >= cfg.max_proposals:
                reason = f"over the limit of {cfg.max_proposals} proposals per run"
                label = safe_label(draft.name, cfg.secrets)
                summary.refused.append(DroppedBrief(name=label, reason=reason))
                continue
            result = screen(draft, ctx)
            if isinstance(result, Dropped):
                brief = _dropped_brief(result)
                (summary.suppressed if result.suppressed else summary.refused).append(brief)
                if result.suppressed:  # "no change to the live skill": the evidence has its skill
                    acted.update(sources(draft.based_on, batch.shown_ids))
                continue
            repeat = await repeat_of(result, ctx)
            acted.update(result.based_on)
            if repeat is not None:
                summary.suppressed.append(_dropped_brief(repeat))
                continue
            proposal = await self.reviewer.submit(result, run.id)
            summary.proposed.append(_brief(proposal))
            if proposal.status == "pending":
                ctx.pending.append(proposal)
        return acted

    def _live_claims(self) -> list[Known]:
        """Every enabled skill as a claim, so a renamed copy of one is recognised."""
        library = self.catalog.library
        out = []
        for name in sorted(self.catalog.enabled):
            try:
                skill = library.read(name)
            except SkillError:
                continue
            out.append(live_claim(skill.name, skill.description, skill.body))
        return out


def _drafted(summary: RunSummary) -> int:
    """Proposals the model made this pass (retirements come from measurement, not the model)."""
    return sum(1 for p in summary.proposed if p.kind != "retire")


def _dropped_brief(d: Dropped) -> DroppedBrief:
    return DroppedBrief(
        name=d.name,
        reason=d.reason,
        matched=d.matched,
        matched_skill=d.matched_skill,
        detail=d.detail,
    )


def _brief(p: Proposal) -> ProposalBrief:
    return ProposalBrief(
        id=p.id,
        kind=p.kind,
        name=p.name,
        target=p.target,
        description=p.description,
        status=p.status,
    )


def _report(
    summary: RunSummary, before: tuple[int, int, int], shown: int, skipped: int
) -> BatchReport:
    return BatchReport(
        index=summary.batches,
        sessions=shown,
        skipped=skipped,
        proposed=len(summary.proposed) - before[0],
        suppressed=len(summary.suppressed) - before[1],
        refused=len(summary.refused) - before[2],
    )
