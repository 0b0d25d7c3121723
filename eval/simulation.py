"""The learning loop, cycle by cycle: conversations, synthesis, review, restart; and its figures.

The held-out users are measured before the first cycle. A cycle starts the gateway
on the data dir the previous cycle left, lets the training users ask, rate and
comment, runs one synthesis pass, lets the reviewer take a second look at the
rejections it repeats, has it decide every card, and stops the gateway. A last
start measures the held-out users once more. Held-out users never press a button:
their sessions carry no signal, so nothing they say is learned from, and their turns
skip the skill holdout, so both measurements see every enabled skill.

With `judge_accuracy` set, every proposal that reaches review is tried first on the
training users' rated turns (`eval/trial.py`, with a simulated judge) and the reviewer
reads the trial's verdict. Without it nothing of the trial runs or draws.
"""

from __future__ import annotations

import random
import tempfile
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from pydantic_settings import BaseSettings, PydanticBaseSettingsSource

from eval.config import Config, RealModel
from eval.corpus import Question
from eval.figures import CycleStats, HeldOut, Result, audit
from eval.model import ScriptedModel
from eval.reviewer import ScriptedReviewer
from eval.rig import ADMIN_TOKEN, REVIEWER_ID, WEBHOOK_SECRET, Answer, Gateway
from eval.trial import LiveSkill, RatedTurn, SimulatedJudge, run_trial
from eval.world import (
    BANKS,
    User,
    applies,
    meets,
    pleased,
    population,
    questions_for,
    rate,
)
from gateway.config import Settings
from gateway.synthesis.verdict import Verdict as TrialVerdict
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegramAPI

TRAINING_IDS = 10_001
HELD_OUT_IDS = 20_001
SCRIPTED_MODEL = "scripted-model"
REPEATS = ("matches rejected proposal", "matches refused retirement")


class _IsolatedSettings(Settings):
    """Settings from the run's config only: the environment and `.env` cannot change a figure."""

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings,)


def gateway_settings(
    config: Config, data_dir: Path, telegram: FakeTelegramAPI, model: RealModel
) -> Settings:
    """The gateway's settings for a run: Telegram at the fake, sessions finished at once."""
    values: dict[str, Any] = {
        "data_dir": data_dir,
        "admin_token": ADMIN_TOKEN,
        "session_idle_minutes": 0,
        "synthesis_interval_minutes": 0,
        "telegram_bot_token": telegram.token,
        "telegram_webhook_secret": WEBHOOK_SECRET,
        "telegram_api_base_url": telegram.base_url,
        "telegram_admin_ids": [REVIEWER_ID],
        "llm_base_url": model.base_url,
        "llm_model": model.model,
        "llm_api_key": model.api_key,
        "llm_max_retries": 2 if config.real_model else 0,
        "llm_timeout_seconds": 60 if config.real_model else 10,
        "skill_holdout": config.skill_holdout,
        "skill_index_tokens": config.index_budget,
        "max_proposals_per_run": config.max_proposals,
        # A pass reads the sessions of its cycle and those of earlier cycles nothing came of
        # yet; the default window (14 days) spans every cycle of a run.
    }
    return _IsolatedSettings(**values)


class Simulation:
    """One run of the loop under a config."""

    def __init__(self, config: Config, progress: Callable[[str], None] | None = None) -> None:
        self.config = config
        self.progress = progress or (lambda line: None)
        self.users = population(config.seed, config.users, TRAINING_IDS)
        self.bank = BANKS[config.bank]
        self.held = population(config.seed, config.held_out, HELD_OUT_IDS)
        self.held_questions = {
            u.user_id: questions_for(random.Random(f"{u.seed}:held-out"), config.held_out_questions)
            for u in self.held
        }
        self.reviewer = ScriptedReviewer(
            REVIEWER_ID,
            seed=config.seed,
            false_reject=config.false_reject,
            false_approve=config.false_approve,
        )
        self.model: ScriptedModel | None = None
        self.judge = (
            None if config.judge_accuracy is None else SimulatedJudge(config.judge_accuracy)
        )
        self.turns: list[RatedTurn] = []
        """The training users' rated turns, oldest first (kept only when proposals are tried)."""
        self._gw: Gateway | None = None
        self._result: Result | None = None

    async def run(self, data_dir: Path | None = None) -> Result:
        """Run every cycle and the final measurement; the data dir is a fresh temporary one."""
        cfg = self.config
        async with AsyncExitStack() as stack:
            telegram = await stack.enter_async_context(FakeTelegramAPI())
            model = cfg.real_model
            if model is None:
                fake = await stack.enter_async_context(FakeOpenAI(models=(SCRIPTED_MODEL,)))
                self.model = ScriptedModel(
                    cfg.seed, bad_share=cfg.bad_share, paraphrase=cfg.paraphrase
                )
                fake.default = fake.judge = self.model
                model = RealModel(fake.base_url, SCRIPTED_MODEL)
            if data_dir is None:
                data_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="sg-eval-")))
            gw = Gateway(gateway_settings(cfg, data_dir, telegram, model), telegram)
            stack.push_async_callback(gw.close)
            result = Result(cfg, model.model)
            self._gw, self._result = gw, result
            runs: dict[int, int] = {}
            for cycle in range(1, cfg.cycles + 1):
                await gw.start(f"{cfg.seed}:holdout:{cycle}")
                stats = CycleStats(cycle)
                if cycle == 1:
                    result.held_out.append(await self._held_out(gw, 0, stats))
                await self._cycle(gw, stats, runs)
                result.cycles.append(stats)
                await gw.stop()  # a restart between every two cycles
                self.progress(stats.line())
            await gw.start(f"{cfg.seed}:holdout:final")
            final = CycleStats(cfg.cycles + 1)
            result.held_out.append(await self._held_out(gw, cfg.cycles, final))
            result.final_costs = final.costs
            await audit(gw, result, runs, self.reviewer, self.model)
            result.starts = gw.starts
            await gw.stop()
        return result

    async def _cycle(self, gw: Gateway, stats: CycleStats, runs: dict[int, int]) -> None:
        for user in self.users:
            await self._converse(gw, user, stats)
        emitted = len(self.model.emitted) if self.model else 0
        summary = await gw.api("POST", "/synthesize")
        runs[int(summary["run_id"])] = stats.cycle
        stats.summary = summary
        stats.synthesis_error = summary.get("error")
        stats.emitted = (emitted, len(self.model.emitted) if self.model else 0)
        stats.proposed = len(summary["proposed"])
        stats.retirements = sum(1 for p in summary["proposed"] if p["kind"] == "retire")
        suppressed = [str(s["reason"]) for s in summary["suppressed"]]
        stats.repeats_suppressed = sum(1 for r in suppressed if r.startswith(REPEATS))
        stats.retirements_repeated = sum(1 for r in suppressed if r.startswith(REPEATS[1]))
        stats.duplicates_avoided = len(suppressed) - stats.repeats_suppressed
        stats.refused = len(summary["refused"])
        stats.reopened = len(await self.reviewer.second_look(gw, summary["suppressed"]))
        trial = self.trial if self.judge is not None else None
        decisions = await self.reviewer.review(gw, stats.cycle, trial)
        stats.approved = sum(1 for d in decisions if d.approved)
        stats.rejected = len(decisions) - stats.approved
        skills = await gw.api("GET", "/skills")
        stats.skills_live = sum(1 for s in skills if s["enabled"])
        stats.learned_live = sum(1 for s in skills if s["enabled"] and s["source"] == "auto")

    async def _converse(self, gw: Gateway, user: User, stats: CycleStats) -> None:
        """A training user asks their questions of the cycle, rates, and explains some 👎."""
        rng = random.Random(f"{user.seed}:cycle:{stats.cycle}")
        for question in questions_for(rng, self.config.questions):
            answer = await gw.ask(user.user_id, question.text)
            stats.answers += 1
            if answer.message is None or answer.answer_id is None:
                stats.errors += 1
                continue
            stats.costs.append(await gw.cost(answer.answer_id))
            rating = rate(user, answer.text, question, rng, self.config.habits, self.bank)
            if rating.value is None:
                continue
            prompt = await gw.rate(user.user_id, answer, rating.value)
            if self.judge is not None:
                self.turns.append(
                    await self._rated(gw, user, question, answer, rating.value, stats)
                )
            if rating.value > 0:
                stats.up += 1
            else:
                stats.down += 1
            if rating.comment and prompt is not None:
                await gw.reply(user.user_id, prompt, rating.comment)
                stats.comments += 1

    @staticmethod
    async def _rated(
        gw: Gateway, user: User, question: Question, answer: Answer, value: int, stats: CycleStats
    ) -> RatedTurn:
        """A rated turn as a trial reads it: its session, who asked what, what they were shown."""
        assert answer.answer_id is not None
        message = await gw.parts.store.get_message(answer.answer_id)
        if message is None:
            raise RuntimeError(f"answer {answer.answer_id} is not stored")
        return RatedTurn(stats.cycle, message.session_id, user, question, answer.text, value)

    async def trial(self, proposal: dict[str, Any], cycle: int) -> TrialVerdict:
        """Try a proposal on the rated turns so far with the skills live now; keep the trial."""
        assert self.judge is not None and self._gw is not None and self._result is not None
        catalog = self._gw.parts.catalog
        live = []
        for name in sorted(catalog.enabled):
            skill = catalog.library.read(name)
            live.append(LiveSkill(name, skill.description, skill.body))
        tried = run_trial(
            proposal,
            cycle,
            self.turns,
            live,
            judge=self.judge,
            per_side=self.config.trial_turns,
            budget=self.config.index_budget,
            seed=self.config.seed,
        )
        self._result.trials.append(tried)
        return tried.verdict

    async def _held_out(self, gw: Gateway, after: int, stats: CycleStats) -> HeldOut:
        """The held-out users ask their fixed questions; they judge but never press a button."""
        point = HeldOut(after)
        with gw.every_skill():
            for user in self.held:
                await self._panel(gw, user, point, stats)
        return point

    async def _panel(self, gw: Gateway, user: User, point: HeldOut, stats: CycleStats) -> None:
        """One held-out user's fixed questions, judged without noise and with it."""
        rng = random.Random(f"{user.seed}:held-out:{point.after}")
        for question in self.held_questions[user.user_id]:
            answer = await gw.ask(user.user_id, question.text)
            point.answers += 1
            if answer.answer_id is None:
                continue  # an error placeholder pleases nobody
            stats.costs.append(await gw.cost(answer.answer_id))
            good = pleased(user.preferences, answer.text, question)
            point.pleased += good
            for preference in user.preferences:
                if applies(preference, question):
                    point.held[preference] += 1
                    point.met[preference] += meets(preference, answer.text, question)
            point.up += good != (rng.random() < self.config.habits.noise)
