"""The synthesizer: one pass from unconsumed finished sessions to screened, staged proposals.

Evidence accumulates: a shown session that nothing came of stays eligible for later
passes while it is younger than the evidence window, shown again only beside fresh
evidence like it (see `evidence`), so complaints days apart meet in one batch and a pass
with nothing fresh makes no call; a session is consumed once a proposal (or a suppressed
repeat of a known claim) was based on it, so no evidence a rejection answered is
proposed from again. Each candidate is checked against what is known (see `sameness`);
one the model could not judge is held back for the next pass (see `held`).

A pass holds a leased lock row, so two passes never overlap, in one process or
several, and a crashed holder blocks nobody for longer than the lease. Each
batch is one model call asking for the answer's JSON schema; its sessions are
consumed once the answer was used, so a restart neither repeats nor loses them.
A batch whose answer is not the agreed JSON ends the run as failed, stages
nothing and leaves its sessions for the next pass; after BATCH_ATTEMPTS such answers in a row the
batch is recorded in the run's error and skipped (consumed), so one batch a
model cannot answer is not re-sent forever. Each pass first measures every skill's effect on
ratings and proposes retiring the harmful ones (see `effect` and `retire`);
retirements do not count against the per-pass proposal limit.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from gateway.config import SynthesisSettings
from gateway.core.embeddings import Embedder
from gateway.core.events import Events
from gateway.core.fence import new_tag
from gateway.core.llm import LLM
from gateway.core.settings import ModelSettings
from gateway.core.tools import ToolDirectory
from gateway.errors import ModelError, SkillError, SynthesisError
from gateway.i18n import N_
from gateway.review.proposals import Candidate, Proposal, Rejection
from gateway.review.reviewer import Reviewer
from gateway.review.trials import Reason, TrialPair
from gateway.skills.catalog import SkillCatalog
from gateway.skills.effect import (
    EffectThresholds,
    SkillEffect,
    settled,
    short_of_comparison,
    skill_effects,
    take_looks,
)
from gateway.skills.live import load_live
from gateway.synthesis.answer import ProposalDraft, answer_schema, parse_answer
from gateway.synthesis.budget import Budget, fit
from gateway.synthesis.calibration import Calibration, Calibrator, Pair, judge_line
from gateway.synthesis.comparison import ComparePair
from gateway.synthesis.evidence import Batch, batches, beside_fresh
from gateway.synthesis.held import (
    HELD_TRIES,
    HeldDraft,
    held_drafts,
    hold,
    keep_held,
    next_try,
    waiting_for,
)
from gateway.synthesis.intake import Considered, consider
from gateway.synthesis.judge import SAME_CLAIM
from gateway.synthesis.lock import INTERRUPTED, LOCK_NAME, holder_dead, new_holder
from gateway.synthesis.meter import MeteredLLM
from gateway.synthesis.ports import SynthesisStore
from gateway.synthesis.prompt import MAX_TOOLS, build_messages
from gateway.synthesis.retire import propose_retirements
from gateway.synthesis.runs import RunDropped, RunRecord
from gateway.synthesis.sameness import Known, SameClaim, SameClaimConfig
from gateway.synthesis.screening import (
    ScreenContext,
    live_claim,
)
from gateway.synthesis.summary import (
    BatchReport,
    HeldBrief,
    Progress,
    ProposalBrief,
    RunSummary,
    brief,
    drafted,
    dropped_brief,
    report,
)
from gateway.synthesis.trial import Trial, TrialConfig

__all__ = [
    "LOCK_NAME",
    "BatchReport",
    "ProposalBrief",
    "RunSummary",
    "SynthesisConfig",
    "Synthesizer",
]
log = logging.getLogger(__name__)
BUDGET_REACHED = "learning budget reached"
BUDGET_TOLD_KEY = "synthesis.learning_budget_told"
"""The UTC day the admins were last told the learning budget was reached."""


BUDGET_NOTICE = N_(
    "⏸️ Learning stopped for today: it spent {spent} tokens of its daily budget of {budget}"
    " (SKILLGATE_LEARNING_DAILY_TOKENS). It resumes at 00:00 UTC; chats are not affected."
)


class BudgetReached(Exception):
    """The day's learning tokens reached SKILLGATE_LEARNING_DAILY_TOKENS: no more calls today."""

    def __init__(self, spent: int, limit: int) -> None:
        super().__init__(
            f"{BUDGET_REACHED}: {spent} of {limit} tokens spent today"
            " (SKILLGATE_LEARNING_DAILY_TOKENS); learning resumes at 00:00 UTC"
        )
        self.spent = spent
        self.limit = limit


BATCH_ATTEMPTS = 3


def iso_time(ts: float) -> str:
    """`2026-12-07 18:00 UTC`."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M UTC")


FAILED_BATCH_KEY = "synthesis.failed_batch"


@dataclass(frozen=True)
class SynthesisConfig:
    """The synthesizer's knobs, from Settings."""

    max_proposals: int = 3
    similarity_threshold: float = 0.85
    batch_sessions: int = 20
    batch_tokens: int = 6000
    max_skill_bytes: int = 16_384
    temperature: float | None = 0.2
    """Of the synthesis call (None: the server's default)."""
    session_idle_seconds: float = 1800.0
    secrets: Sequence[str] = ()
    lease_seconds: float = 900.0
    effect: EffectThresholds = field(default_factory=EffectThresholds)
    comparands: int = 4
    """Known claims (most like first) each candidate is compared with by the model."""
    evidence_window_seconds: float = 14 * 86400.0
    """How long a shown session not yet acted on stays eligible; 0: every session is read once."""
    context_tokens: int | None = None
    """The model's context, when known: batches and answers are sized to fit it."""
    learning_daily_tokens: int = 0
    """Tokens learning may spend a UTC day; 0: no budget."""
    trial_turns_per_side: int = 0
    """Rated turns a proposal's trial answers again per side; 0: no trials."""
    trial_calls: int = 40
    """Most model calls of one proposal's trial."""

    @classmethod
    def of(
        cls, synthesis: SynthesisSettings, model: ModelSettings, secrets: Sequence[str]
    ) -> SynthesisConfig:
        """The knobs the synthesis and model sections set; `secrets` are never echoed."""
        return cls(
            max_proposals=synthesis.max_proposals_per_run,
            similarity_threshold=synthesis.similarity_threshold,
            batch_sessions=synthesis.synthesis_batch_sessions,
            batch_tokens=synthesis.synthesis_batch_tokens,
            max_skill_bytes=synthesis.max_skill_bytes,
            temperature=synthesis.synthesis_temperature,
            session_idle_seconds=model.session_idle_seconds,
            secrets=tuple(secrets),
            comparands=synthesis.same_claim_comparands,
            evidence_window_seconds=synthesis.evidence_window_days * 86400,
            context_tokens=model.llm_context_tokens,
            learning_daily_tokens=synthesis.learning_daily_tokens,
            trial_turns_per_side=synthesis.trial_turns_per_side,
            trial_calls=synthesis.trial_calls,
            effect=EffectThresholds(
                min_evidence=synthesis.retire_min_evidence,
                margin=synthesis.retire_margin,
                alpha=synthesis.retire_false_alarms,
            ),
        )

    @property
    def budget(self) -> Budget:
        return fit(self.context_tokens, self.batch_tokens, self.max_proposals, self.max_skill_bytes)


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
        judge: LLM | None = None,
        events: Events | None = None,
        calibrator: Calibrator[Pair] | None = None,
        told_budget: Callable[[int, int], Awaitable[None]] | None = None,
        answerer: LLM | None = None,
        trial: TrialConfig | None = None,
        trial_calibrator: Calibrator[ComparePair] | None = None,
    ) -> None:
        self.store = store
        self.llm = llm
        self.catalog = catalog
        self.reviewer = reviewer
        self.config = config
        self.clock = clock
        self.embedder = embedder
        self.judge = judge or llm
        self.tools: ToolDirectory | None = None
        """The live tools and their policies, listed in the prompt (None: no tools)."""
        self.events = events or Events()
        """Told each finished pass, once its record is durable (the admins' repeat notice)."""
        self.meter = MeteredLLM(self.judge)
        """The judge's same-claim and calibration questions, counted as learning tokens on the
        next pass to finish (and by the daily learning budget before that)."""
        self.same = SameClaim(
            SameClaimConfig(threshold=config.similarity_threshold, comparands=config.comparands),
            embedder=embedder,
            judge=self.meter,
            calibrator=calibrator,
        )
        self.calibrator = calibrator
        """Tries the judge before it is trusted (None: trusted untried)."""
        self.told_budget = told_budget
        """Tells the admins (budget, spent) the day's learning budget is reached, once a day."""
        self.answer_meter = MeteredLLM(answerer or llm)
        """The answering model's calls in trials, counted as learning like the judge's."""
        self.trial = (
            Trial(
                store,
                self.answer_meter,
                self.meter,
                catalog,
                trial,
                calibrator=trial_calibrator,
            )
            if trial is not None and trial.turns_per_side > 0
            else None
        )
        """Tries each created or updated proposal before it is staged (None: no trials)."""
        self._holder: str | None = None
        """This process's hold on the run lock while a pass runs (a trial renews its lease)."""

    async def calibrate(self, *, again: bool = False) -> Calibration | None:
        """The judge's calibration, tried now if it has none (`again`: tried anew).

        None without a calibrator; Unreachable when the judge cannot be asked.
        """
        if self.calibrator is None:
            return None
        # Through the meter: the calibration's questions are learning spend, counted on the
        # next pass.
        return await self.calibrator.result(self.meter, SAME_CLAIM, again=again)

    async def judge_status(self) -> Calibration | None:
        """The judge's standing as last calibrated (None: not tried yet)."""
        if self.calibrator is None:
            return None
        model = self.judge.model or ""
        if model in self.calibrator.trusted:
            found: Calibration | None = await self.calibrator.result(self.judge, SAME_CLAIM)
        else:
            found = await self.store.calibration(model, SAME_CLAIM.kind)
        return found

    async def run(self, trigger: str = "manual", progress: Progress | None = None) -> RunSummary:
        """One pass now; `busy` when another pass holds the lock."""
        # One holder per pass, so a second pass in this process is kept out too.
        holder = new_holder()
        lease = self.config.lease_seconds
        if not await self.store.acquire_lock(LOCK_NAME, holder, self.clock(), lease):
            current = await self.store.lock_holder(LOCK_NAME, self.clock())
            if current is None or not holder_dead(current):
                return RunSummary(status="busy", trigger=trigger, error="another pass is running")
            log.warning("the synthesis lock's holder %s is gone; taking the lock over", current)
            await self.store.release_lock(LOCK_NAME, current)
            if not await self.store.acquire_lock(LOCK_NAME, holder, self.clock(), lease):
                return RunSummary(status="busy", trigger=trigger, error="another pass is running")
        self._holder = holder
        try:
            return await self._run(trigger, progress, holder)
        finally:
            self._holder = None
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
            await self._retry_held(run, summary)
            window = cfg.evidence_window_seconds
            since = now - window if window > 0 else None
            limits = {"max_sessions": cfg.batch_sessions, "max_tokens": cfg.budget.batch_tokens}
            beside = await beside_fresh(self.store, since=since, **limits) if window > 0 else []
            async for batch in batches(
                self.store,
                **limits,
                tag=new_tag(),  # unguessable by chat text written before this pass
                since=since,
                fresh=window > 0,  # older evidence comes back only beside fresh evidence
                beside=beside,
            ):
                if drafted(summary) >= cfg.max_proposals:
                    break  # what is left stays unconsumed for the next pass
                if batch.sessions:
                    await self._within_budget(run)  # before the call: nothing read or consumed
                before = (len(summary.proposed), len(summary.suppressed), len(summary.refused))
                consumed = batch.consumed_ids
                # Read and shown to the model, whatever its answer: the run page counts them.
                summary.sessions += len(batch.sessions)
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
                        acted, keep = await self._batch(batch, run, summary)
                    except SynthesisError as exc:
                        await self._unusable(batch, exc, summary)  # re-raises until skipped
                    else:
                        await self.store.set_meta(FAILED_BATCH_KEY, "{}")
                        if window > 0:
                            # Evidence nothing came of yet stays for later passes (see evidence).
                            consumed = [*batch.skipped, *(i for i in batch.shown_ids if i in acted)]
                        consumed = [i for i in consumed if i not in keep]
                await self.store.consume_sessions(consumed, run.id, self.clock())
                if shown_again := [i for i in batch.shown_ids if i not in consumed]:
                    await self.store.note_showings(shown_again, self.clock())
                summary.skipped += len(batch.skipped)
                if not await self.store.acquire_lock(
                    LOCK_NAME, holder, self.clock(), cfg.lease_seconds
                ):
                    raise SynthesisError("the run lock's lease ran out and another pass took it")
                if progress is not None and batch.sessions:
                    progress(report(summary, before, len(batch.sessions), len(batch.skipped)))
        except BudgetReached as reached:
            run.stopped = summary.stopped = str(reached)  # not a failure: learning rests today
            log.warning("synthesis run %s: %s", run.id, reached)
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
        for meter in (self.meter, self.answer_meter):  # the judge's and trials' calls too
            asked, answered = meter.take()
            run.prompt_tokens += asked
            run.completion_tokens += answered
        summary.prompt_tokens = run.prompt_tokens
        held = await held_drafts(self.store)
        summary.held = [
            HeldBrief(
                name=e.draft.name,
                reason=e.reason,
                tries=e.tries,
                next_at=e.next_at,
                waits_for=e.waits_for,
            )
            for e in held
        ]
        if waits := [e for e in held if e.waits_for is not None]:
            log.info(
                "synthesis run %s: %d candidate(s) wait for a proposal of their skill: %s",
                run.id,
                len(waits),
                "; ".join(f"{e.draft.name} (#{e.waits_for})" for e in waits),
            )
        held = [e for e in held if e.waits_for is None]
        if held:
            log.warning(
                "synthesis run %s: %d candidate(s) held back for want of a same-claim answer: %s",
                run.id,
                len(held),
                "; ".join(
                    f"{e.draft.name} ({e.reason}; asked {e.tries} of {HELD_TRIES} times,"
                    f" next {iso_time(e.next_at)})"
                    for e in held
                ),
            )
        if (judge := await self.judge_status()) is not None:
            summary.judge = judge_line(judge)
            if judge.verdict == "unable" and any(c.decision == "undecided" for c in summary.checks):
                log.warning("synthesis run %s: the judge %s", run.id, summary.judge)
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
                    "stopped": summary.stopped,
                }
            ),
            [
                *(RunDropped(kind="suppressed", **d.model_dump()) for d in summary.suppressed),
                *(RunDropped(kind="refused", **d.model_dump()) for d in summary.refused),
            ],
            summary.checks,
            summary.repeats,
        )
        await self.events.publish(summary)
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
        """Measure every skill, take and record the looks due; propose retiring the harmful
        ones; end holdout for settled ones."""
        effects = take_looks(await self.effects(), self.config.effect)
        # Recorded before anything acts on them: a look is never taken twice, and a verdict
        # reached survives a crash before its retirement is proposed.
        looks = [e for e in effects.values() if e.new_look]
        await self.store.record_looks(looks, self.clock())
        done = await propose_retirements(
            self.store,
            self.catalog.library,
            self.reviewer,
            effects,
            self.config.effect,
            run_id=run.id,
            now=self.clock(),
        )
        summary.proposed.extend(brief(p) for p in done.proposed)
        summary.suppressed.extend(dropped_brief(d) for d in done.dropped)
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

    async def _batch(
        self, batch: Batch, run: RunRecord, summary: RunSummary
    ) -> tuple[set[int], set[int]]:
        """Ask the model about one batch, screen and submit what it proposed.

        Returns the sessions acted on (sources of a staged or held proposal, or of a repeat of
        a rejection, a pending proposal or a live skill: their evidence has its answer), and
        those to keep unconsumed whatever the window (sources of a candidate that could be
        neither checked nor held).
        """
        cfg = self.config
        pending = await self.store.pending_proposals()
        rejections = await self.store.rejections()
        tools = self.tools.directory() if self.tools is not None else ()
        room = cfg.max_proposals - drafted(summary)
        messages = build_messages(
            batch,
            self.catalog,
            pending,
            rejections,
            max_proposals=room,
            max_bytes=cfg.max_skill_bytes,
            tools=tools,
        )
        listed = [t.name for t in tools[:MAX_TOOLS]]
        completion = await self.llm.complete(
            messages,
            json_mode=True,
            json_schema=answer_schema(
                room, cfg.max_skill_bytes, batch.shown_ids, listed, sorted(self.catalog.enabled)
            ),
            max_tokens=cfg.budget.answer_tokens,
            retry_timeouts=True,  # nobody waits on a pass; a slow model deserves a second try
            temperature=cfg.temperature,
        )
        run.prompt_tokens += completion.prompt_tokens
        run.completion_tokens += completion.completion_tokens
        try:
            drafts = parse_answer(completion.text)  # nothing is staged unless all of it parses
        except SynthesisError as exc:
            if completion.cut_by is not None:
                # The gateway's own bound, not the model's context: name the one to move. Not
                # the batch's fault either: no attempt of its sessions is used up.
                raise ModelError(
                    f"the model's answer was cut at {completion.cut_by}, before it was"
                    f" whole: raise that setting for a slow model: {exc}"
                ) from exc
            if completion.finish_reason == "length":
                limit = cfg.budget.cut(completion.prompt_tokens, completion.completion_tokens)
                raise SynthesisError(f"the model's answer was {limit}: {exc}") from exc
            raise
        model = completion.model or self.llm.model
        ctx = await self._context(batch.shown_ids, model, pending, rejections)
        acted: set[int] = set()
        keep: set[int] = set()
        for draft in drafts:
            outcome, ids, waits_on = await self._consider(draft, ctx, run, summary)
            if outcome == "held":
                held = HeldDraft(draft=draft, shown=list(ctx.shown), model=ctx.model)
                if not await hold(self.store, self._held_again(held, 1, summary)):
                    keep.update(ids)
            elif outcome == "waits":
                entry = HeldDraft(draft=draft, shown=list(ctx.shown), model=ctx.model, tries=0)
                if not await hold(self.store, waiting_for(entry, waits_on)):
                    keep.update(ids)
            elif outcome == "acted":
                acted.update(ids)
        return acted, keep

    def _held_again(self, entry: HeldDraft, tries: int, summary: RunSummary) -> HeldDraft:
        """`entry` asked `tries` times without an answer: when next, and why (on its check)."""
        now = self.clock()
        check = summary.checks[-1]
        entry = entry.model_copy(
            update={"tries": tries, "next_at": next_try(tries, now), "reason": check.reason}
        )
        when = "at the next pass" if entry.next_at <= now else f"after {iso_time(entry.next_at)}"
        check.reason = (
            f"{check.reason} (asked {tries} of {HELD_TRIES} times; asked again {when},"
            " then a person decides)"
        )
        return entry

    async def _consider(
        self,
        draft: ProposalDraft,
        ctx: ScreenContext,
        run: RunRecord,
        summary: RunSummary,
        *,
        last_try: bool = False,
    ) -> Considered:
        """One draft of this pass through `intake.consider` (see there); a draft for a skill
        with a proposal awaiting review waits for its decision."""
        return await consider(
            draft,
            ctx,
            lambda candidate: self.stage(candidate, run, ctx.shown),
            summary,
            max_proposals=self.config.max_proposals,
            secrets=self.config.secrets,
            last_try=last_try,
            wait=True,
        )

    async def take(self, draft: ProposalDraft) -> RunSummary:
        """One draft from outside a pass (an imported skill), through the very path a pass's
        drafts take (`intake.consider`): screened, checked against what is known, tried
        (`stage`), staged and carded, or dropped with its reason. Where the judge cannot
        answer, a person decides: the card names the nearest known claims. Nothing is
        consumed and no run is recorded; the judges' and the trial's tokens count as learning
        spend on the next pass."""
        # The pass's lock: no pass or other import checks the same names while this one
        # stages, in this process or another (a staged file is one per skill).
        holder = new_holder()
        if not await self.store.acquire_lock(
            LOCK_NAME, holder, self.clock(), self.config.lease_seconds
        ):
            busy = "a synthesis pass or another import is running: try again once it ends"
            return RunSummary(status="busy", trigger="import", error=busy)
        self._holder = holder  # a long trial renews the lease as a pass's does
        try:
            summary = RunSummary(status="ok", trigger="import")
            ctx = await self._context((), None)
            await consider(
                draft,
                ctx,
                lambda candidate: self.stage(candidate),
                summary,
                max_proposals=max(1, self.config.max_proposals),
                secrets=self.config.secrets,
                last_try=True,
            )
            return summary
        finally:
            self._holder = None
            await self.store.release_lock(LOCK_NAME, holder)

    async def stage(
        self, candidate: Candidate, run: RunRecord | None = None, held_out: Sequence[int] = ()
    ) -> Proposal:
        """Try a screened candidate (see `trial`), then hand it to review with what the trial
        found. Every created or updated proposal that passed screening comes through here;
        `held_out`: the sessions it was drawn from beside its own (never tried as guards)."""
        pairs: list[TrialPair] = []
        if self.trial is not None and candidate.kind in ("create", "update"):
            outcome = await self.trial.run(
                candidate, held_out, budget_left=lambda: self._budget_left(run)
            )
            candidate = candidate.model_copy(update={"trial": outcome.summary})
            pairs = outcome.pairs
            log.info(
                "trial of %s: %s%s (%d calls)",
                candidate.slug,
                outcome.summary.verdict,
                f", {outcome.summary.reason}" if outcome.summary.reason else "",
                outcome.summary.calls,
            )
        return await self.reviewer.submit(candidate, run.id if run else None, pairs)

    async def _budget_left(self, run: RunRecord | None) -> Reason | None:
        """Why a trial must stop now (the day's budget reached, the run lock lost), or None.

        Asked before each turn, so a long trial on a slow model keeps the pass's lease.
        """
        try:
            await self._within_budget(run)
        except BudgetReached as reached:
            values = {"spent": str(reached.spent), "limit": str(reached.limit)}
            return Reason(code="learning_budget", values=values)
        holder, lease = self._holder, self.config.lease_seconds
        if holder is not None and not await self.store.acquire_lock(
            LOCK_NAME, holder, self.clock(), lease
        ):
            return Reason(code="lease_lost")
        return None

    async def _context(
        self,
        shown: Sequence[int],
        model: str | None,
        pending: list[Proposal] | None = None,
        rejections: Sequence[Rejection] | None = None,
    ) -> ScreenContext:
        """What a draft is screened and compared with, as the store has it now."""
        cfg = self.config
        origins = {r.slug: r.source for r in await self.store.skill_records()}
        library = self.catalog.library
        return ScreenContext(
            shown=shown,
            live=lambda slug: load_live(library, slug, origins.get(slug)),
            pending=await self.store.pending_proposals() if pending is None else pending,
            rejections=await self.store.rejections() if rejections is None else rejections,
            threshold=cfg.similarity_threshold,
            max_bytes=cfg.max_skill_bytes,
            secrets=cfg.secrets,
            model=model,
            now=self.clock(),
            same=self.same,
            live_skills=self._live_claims(),
            tools=frozenset(t.name for t in self.tools.directory()) if self.tools else frozenset(),
        )

    async def _retry_held(self, run: RunRecord, summary: RunSummary) -> None:
        """Check again the candidates an earlier pass held back, and those whose skill's pending
        proposal was decided since; keep those still unanswered or still waiting."""
        waiting = await held_drafts(self.store)
        undecided: set[int | None] = set()
        if any(e.waits_for is not None for e in waiting):
            undecided = {p.id for p in await self.store.pending_proposals()}
        now = self.clock()
        due = [
            e
            for e in waiting
            if (e.waits_for is None and e.next_at <= now)
            or (e.waits_for is not None and e.waits_for not in undecided)
        ]
        if not due:
            return  # nothing to ask yet: no call
        still = []
        for i, entry in enumerate(waiting):
            if entry not in due:
                still.append(entry)
                continue
            try:
                await self._within_budget(run)
            except BudgetReached:
                # Those asked keep their outcome; the rest keep their place and next try.
                await keep_held(self.store, [*still, *waiting[i:]])
                raise
            ctx = await self._context(entry.shown, entry.model)
            last = entry.tries + 1 >= HELD_TRIES
            outcome, _, pending = await self._consider(
                entry.draft, ctx, run, summary, last_try=last
            )
            if outcome == "held":
                still.append(self._held_again(entry, entry.tries + 1, summary))
            elif outcome == "waits":  # another proposal of its skill came in meanwhile
                still.append(waiting_for(entry, pending))
            elif outcome == "later":
                still.append(entry)
        await keep_held(self.store, still)

    async def _within_budget(self, run: RunRecord | None) -> None:
        """Raise BudgetReached when the UTC day's learning tokens have reached the budget.

        Checked before each learning call; the admins are told once that day.
        """
        limit = self.config.learning_daily_tokens
        if limit <= 0:
            return
        now = self.clock()
        today = datetime.fromtimestamp(now, UTC).date()
        since = datetime(today.year, today.month, today.day, tzinfo=UTC).timestamp()
        # This pass's own tokens are on its record only once it ends: counted here.
        spent = await self.store.learning_tokens(since)
        if run is not None:
            spent += run.prompt_tokens + run.completion_tokens
        spent += self.meter.tokens + self.answer_meter.tokens
        if spent < limit:
            return
        day = today.isoformat()
        if await self.store.get_meta(BUDGET_TOLD_KEY) != day:
            await self.store.set_meta(BUDGET_TOLD_KEY, day)  # the run lock is held: one teller
            if self.told_budget is not None:
                await self.told_budget(limit, spent)
        raise BudgetReached(spent, limit)

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
