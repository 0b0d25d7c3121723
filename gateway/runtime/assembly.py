"""The parts of the gateway, built and wired: the one place that knows them all.

`open_parts` opens the store and builds what runs on it, each component handed the parts
and the section of the settings it uses; `subscribe` lists who is told of each event;
`channel_ports` is what a channel is given when it starts; `close_parts` closes what
`open_parts` opened. The server (`gateway.app`) and the terminal commands both start here.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from gateway.channels.base import Channel, DeliveryLog, Ports
from gateway.channels.registry import by_name, capabilities, configured_channels, polling, secrets
from gateway.config import Settings
from gateway.conversation.attachments import Attachments
from gateway.conversation.dispatch import Conversation
from gateway.conversation.language import Languages
from gateway.conversation.ports import ConversationPorts
from gateway.conversation.reminders import ReminderDelivery
from gateway.conversation.voice import Voicing
from gateway.core.agent import Agent, AgentConfig
from gateway.core.embeddings import Embedder, OpenAIEmbeddings
from gateway.core.events import Events, ToolCalled
from gateway.core.fallback import FallbackLLM, parse_fallbacks
from gateway.core.json_modes import JsonModeMemory
from gateway.core.llm import LLM, OpenAIChat, UnconfiguredLLM
from gateway.core.memory import Memory
from gateway.core.model_health import ModelHealth, WatchedLLM
from gateway.core.prompt import DEFAULT_PERSONA
from gateway.core.settings import ModelSettings
from gateway.core.tools import ToolAccess, Toolbox
from gateway.core.vision import VisionPolicy
from gateway.errors import ChannelError, ConfigError
from gateway.media.links import MediaLinks, load_key
from gateway.media.stt import OpenAITranscriber, Transcriber
from gateway.media.tts import OpenAISpeaker
from gateway.review.delivery import ReviewCards, start_cards
from gateway.review.events import ReviewEvent
from gateway.review.proposals import PROPOSED_FILE, Proposal
from gateway.review.reconcile import reconcile
from gateway.review.reviewer import Reviewer
from gateway.runtime.inbox import Inbox, InboxWorker, settle_later
from gateway.runtime.metrics import Metrics
from gateway.runtime.replicas import (
    FencedAnswers,
    SharedInboxWorker,
    check_skills_volume,
    replica_name,
    startup_lock,
)
from gateway.runtime.schedule import TaskWorker
from gateway.runtime.transfer import SkillTransfer
from gateway.skills.catalog import SkillCatalog, bundled_skills_dir
from gateway.skills.effect import holdout_state
from gateway.skills.files import describe_files
from gateway.skills.library import SKILL_FILE, SkillLibrary
from gateway.store import Store, open_store
from gateway.synthesis import comparison
from gateway.synthesis.calibration import (
    ONBOARD_NOTICE,
    UNABLE_NOTICE,
    Calibration,
    Calibrator,
    Pair,
    builtin_pairs,
    load_pairs,
)
from gateway.synthesis.comparison import TRIAL_QUESTION, builtin_compare_pairs
from gateway.synthesis.synthesizer import (
    BUDGET_NOTICE,
    RunSummary,
    SynthesisConfig,
    Synthesizer,
)
from gateway.synthesis.trial import TrialConfig
from gateway.tools.build import build_tools
from gateway.tools.toolbox import Tools

log = logging.getLogger(__name__)


@dataclass
class Admins:
    """The chat admins, reached through the proposal cards once the channels have started."""

    cards: ReviewCards | None = None
    """None before the channels start, after they stop, and where no channel has admins."""

    async def tell(self, message: str, ref: str, /, **values: object) -> None:
        """A fixed text to every chat admin, once the cards' transports have started."""
        if self.cards is not None:
            await self.cards.tell_admins(message, ref, **values)


@dataclass
class Parts:
    """What `open_parts` opened, for the one place that wires them (and for tests to look at).

    It does nothing itself, and no component is given it: each gets the parts it uses.
    """

    settings: Settings
    store: Store
    agent: Agent
    catalog: SkillCatalog
    worker: InboxWorker
    review: Reviewer
    synthesizer: Synthesizer
    events: Events
    """Where the reviewer, the synthesizer and the tools publish; `subscribe` lists who hears."""
    inbox: Inbox
    """The inbox door the webhooks store updates through."""
    languages: Languages
    """The language of each chat's fixed texts."""
    attachments: Attachments
    """Reads voice notes, photos and documents for every channel's conversation."""
    admins: Admins
    """The chat admins' cards, once the channels have started."""
    metrics: Metrics
    clock: Callable[[], float] = time.time
    memory: Memory | None = None
    """Per-user memory (None when SKILLGATE_MEMORY is off)."""
    tools: Tools | None = None
    """MCP servers and web tools from the tools file (None: none configured)."""
    voicing: Voicing | None = None
    """Text-to-speech for spoken answers (None: TTS_MODEL is not set)."""
    links: MediaLinks | None = None
    """Files served by signed link (None: no https SKILLGATE_PUBLIC_URL to serve them at)."""
    health: ModelHealth | None = None
    """The outcomes of the model's recent chat calls (answers and synthesis)."""
    transfer: SkillTransfer | None = None
    """Skills imported as proposals and exported once approved (set by `open_parts`)."""


class Deliveries:
    """The store's delivery records as a channel is given them (`AnswerLog`): the write after
    an answer's last message goes with the update's done where the inbox worker handles it."""

    def __init__(self, store: DeliveryLog) -> None:
        self.store = store
        self.get_meta = store.get_meta
        self.set_meta = store.set_meta
        self.set_platform_ids = store.set_platform_ids
        self.delivery_batch = store.delivery_batch
        self.delivery_sent = store.delivery_sent

    async def settle_platform_ids(self, message_id: int, ids: Sequence[str]) -> None:
        if not settle_later(message_id, ids, self.store.set_platform_ids):
            await self.store.set_platform_ids(message_id, ids)


def channel_ports(parts: Parts, channel: Channel) -> Ports:
    """What one channel is given when it starts: the inbox door, its conversation, its records."""
    conversation = Conversation(
        channel.profile,
        ConversationPorts(
            store=parts.store,
            turns=parts.agent,
            counts=parts.metrics,
            review=parts.review,
            synthesis=parts.synthesizer,
            languages=parts.languages,
            alerts=parts.admins.tell,
            attachments=parts.attachments,
            memory=parts.memory,
            voicing=parts.voicing,
            links=parts.links,
            clock=parts.clock,
        ),
        parts.settings,
        secrets=secrets(parts.settings),
        default_timezone=parts.settings.default_timezone,
        max_tasks=parts.settings.user_max_tasks,
        min_repeat_minutes=parts.settings.task_min_repeat_minutes,
        group_tasks=parts.settings.group_tasks,
    )
    return Ports(
        intake=parts.inbox,
        conversation=conversation,
        deliveries=Deliveries(parts.store),
        claims=parts.worker,
    )


def task_worker(
    parts: Parts, started: list[Channel], conversations: Mapping[str, Conversation]
) -> TaskWorker:
    """The scheduled tasks' worker, delivering through the channels that started (an agent
    task answered by its channel's conversation)."""
    senders = {}
    for channel in started:
        transport = channel.card_transport()
        if transport is not None:
            senders[channel.name] = transport
    settings = parts.settings
    delivery = ReminderDelivery(
        senders,
        parts.languages,
        channels={channel.name: channel for channel in started},
        answers=conversations,
        watches={name: c.tasks for name, c in conversations.items()},
    )
    return TaskWorker(
        parts.store,
        delivery,
        holder=replica_name(),
        lease=settings.inbox_lease_seconds,
        grace=settings.task_grace_seconds,
        clock=parts.clock,
        counts=parts.metrics,
    )


def subscribe(
    events: Events,
    *,
    catalog: SkillCatalog,
    admins: Admins,
    metrics: Metrics,
) -> None:
    """Who is told of each event, in the order they are told."""

    async def review_effects(event: ReviewEvent) -> None:
        """What follows every review operation: the skill index, the log, each admin's card."""
        if event.skill is not None:
            catalog.apply(event.skill, event.text)  # the next prompt has it
        if event.proposal is not None:
            log_review_event(event.proposal, event.kind)
            if admins.cards is not None:
                admins.cards.on_review_event(event.kind, event.proposal)

    async def repeats_found(summary: RunSummary) -> None:
        """A pass that found rejections repeated: its notice goes to the chat admins."""
        if summary.repeats and admins.cards is not None:
            admins.cards.repeats_found()

    async def count_tool_call(event: ToolCalled) -> None:
        """A tool call in /metrics (the day's usage counts it with the answer that made it)."""
        metrics.tool_called(event.name, event.record.status)

    events.subscribe(ReviewEvent, review_effects)
    events.subscribe(RunSummary, repeats_found)
    events.subscribe(ToolCalled, count_tool_call)


def trial_functions(tools: Toolbox) -> list[dict[str, Any]]:
    """The tools a private chat is offered, as a trial offers them (never run)."""
    return [spec.as_function() for spec in tools.offer(ToolAccess())]


def calibration_pairs(settings: Settings) -> list[Pair]:
    """The calibration set: the built-in pairs and the operator's; theirs, when unreadable,
    are left out with an error in the log (doctor names it) and the built-in set is used."""
    try:
        return load_pairs(settings.data_dir)
    except ConfigError as exc:
        log.error("the operator's calibration pairs are not used: %s", exc)
        return builtin_pairs()


async def tell_unable(
    store: Store, admins: Admins, clock: Callable[[], float], result: Calibration
) -> None:
    """Tell the chat admins, once per model and question, that a judge cannot judge."""
    if admins.cards is None:
        return  # no admin reachable now: told at the next use, once they are
    if await store.claim_calibration_notice(result.model, result.kind, clock()):
        if result.kind == TRIAL_QUESTION.kind:
            notices = (comparison.ONBOARD_NOTICE, comparison.UNABLE_NOTICE)
        else:
            notices = (ONBOARD_NOTICE, UNABLE_NOTICE)
        await admins.tell(
            notices[0] if result.onboard else notices[1],
            f"judge:{result.kind}:{result.model}",
            model=result.model,
            right=f"{result.correct}/{result.total}",
        )


async def tell_budget(admins: Admins, clock: Callable[[], float], limit: int, spent: int) -> None:
    """Tell the chat admins the day's learning budget is reached (the synthesizer: once a day)."""
    day = datetime.fromtimestamp(clock(), UTC).date().isoformat()
    await admins.tell(BUDGET_NOTICE, f"learning-budget:{day}", spent=spent, budget=limit)


def log_review_event(p: Proposal, kind: str) -> None:
    """Every staged proposal and every decision reaches the log."""
    what = "staged for review" if kind == "staged" else p.status
    by = f" by {p.decided_by}" if p.decided_by and kind == "decided" else ""
    log.info("proposal #%d (%s %s) %s%s", p.id, p.kind, p.slug, what, by)


def make_llm(model: ModelSettings, json_memory: JsonModeMemory | None = None) -> LLM:
    """The configured model (and its fallbacks), or a stand-in that answers 'not configured'."""
    if not model.model_configured:
        return UnconfiguredLLM()
    assert model.llm_base_url is not None and model.llm_model is not None
    keys = model.llm_fallback_api_keys
    fallbacks = parse_fallbacks(
        model.llm_fallback_models,
        keys.get_secret_value().split(",") if keys else [],
        model.llm_base_url,
        model.llm_key,
    )
    chain = [(model.llm_model, model.llm_base_url, model.llm_key), *fallbacks]
    models: list[LLM] = [
        chat_client(model, url, name, key, json_memory) for name, url, key in chain
    ]
    return models[0] if len(models) == 1 else FallbackLLM(models)


def make_learner(model: ModelSettings, json_memory: JsonModeMemory | None = None) -> LLM | None:
    """The model learning drafts with (LLM_LEARNING_MODEL), when not LLM_MODEL itself."""
    if model.llm_learning_model is None or not model.model_configured:
        return None
    assert model.llm_base_url is not None
    return chat_client(
        model, model.llm_base_url, model.llm_learning_model, model.llm_key, json_memory
    )


def make_judge(model: ModelSettings, json_memory: JsonModeMemory | None = None) -> LLM | None:
    """The model asked whether a candidate repeats a known claim, when not the learning model:
    LLM_SAME_CLAIM_MODEL where set (None otherwise: the judge is the learning model)."""
    if model.llm_same_claim_model is None or not model.model_configured:
        return None
    assert model.llm_base_url is not None
    return chat_client(
        model, model.llm_base_url, model.llm_same_claim_model, model.llm_key, json_memory
    )


def chat_client(
    model: ModelSettings,
    url: str,
    name: str,
    key: str | None,
    json_memory: JsonModeMemory | None,
) -> OpenAIChat:
    """One model at one endpoint, with the timeouts, retries and stream bounds of the section."""
    return OpenAIChat(
        url,
        name,
        key,
        timeout=model.llm_timeout_seconds,
        idle_timeout=model.llm_idle_timeout_seconds,
        max_retries=model.llm_max_retries,
        max_tokens=model.llm_max_tokens,
        json_memory=json_memory,
        stream_seconds=model.llm_stream_max_seconds,
        stream_bytes=model.llm_stream_max_bytes,
        unix_socket=model.socket_for(url),
    )


def make_transcriber(settings: Settings) -> Transcriber | None:
    """Speech-to-text at STT_BASE_URL (default: the LLM's endpoint and key), if STT_MODEL is set."""
    if not settings.stt_configured:
        return None
    base, key = settings.beside_model(settings.stt_base_url, settings.stt_api_key)
    assert base is not None and settings.stt_model is not None
    return OpenAITranscriber(
        base,
        settings.stt_model,
        key,
        timeout=settings.stt_timeout_seconds,
        unix_socket=settings.socket_for(base),
    )


def make_speaker(settings: Settings) -> OpenAISpeaker | None:
    """Text-to-speech at TTS_BASE_URL (default: the LLM's endpoint and key), if TTS_MODEL is set."""
    if not settings.tts_configured:
        return None
    base, key = settings.beside_model(settings.tts_base_url, settings.tts_api_key)
    assert base is not None and settings.tts_model is not None
    return OpenAISpeaker(
        base,
        settings.tts_model,
        key,
        timeout=settings.tts_timeout_seconds,
        max_bytes=settings.tts_max_bytes,
        unix_socket=settings.socket_for(base),
    )


def make_links(settings: Settings, clock: Callable[[], float]) -> MediaLinks | None:
    """Signed links under SKILLGATE_PUBLIC_URL, when it is https (LINE fetches only those)."""
    url = settings.public_url
    if url is None or not url.lower().startswith("https://"):
        return None
    return MediaLinks(
        settings.speech_links_dir,
        load_key(settings.data_dir),
        url,
        settings.media_link_seconds,
        clock=clock,
    )


def make_embedder(model: ModelSettings) -> Embedder | None:
    """Embeddings from the model's endpoint when `LLM_EMBEDDING_MODEL` names a model there."""
    if model.llm_embedding_model is None or model.llm_base_url is None:
        return None
    return OpenAIEmbeddings(
        model.llm_base_url,
        model.llm_embedding_model,
        model.llm_key,
        timeout=model.llm_timeout_seconds,
        unix_socket=model.llm_unix_socket,
    )


def load_persona(settings: Settings) -> str:
    """The persona file's text; the default one is written on first start for editing."""
    path = settings.persona_file or settings.data_dir / "persona.md"
    if not path.exists() and settings.persona_file is None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(DEFAULT_PERSONA, encoding="utf-8")
    return Path(path).read_text(encoding="utf-8")


async def open_parts(
    settings: Settings,
    *,
    llm: LLM | None = None,
    clock: Callable[[], float] = time.time,
    metrics: Metrics | None = None,
) -> Parts:
    """Open the store, sync the skills and build the agent (also used by the CLI)."""
    store = await open_store(settings)
    events = Events()
    try:
        library = SkillLibrary(settings.skills_dir)
        catalog = SkillCatalog(library, store)
        review = Reviewer(
            library, store, settings=settings, events=events, clock=clock, users=by_name()
        )
        holder = replica_name()
        async with startup_lock(store, holder) if settings.shared_database else nullcontext():
            if settings.shared_database:
                await check_skills_volume(store, settings.skills_dir)
            # One pass over the folders for both steps: the live and the staged files.
            scanned = library.scan_each((SKILL_FILE, PROPOSED_FILE))
            described = await describe_files(library, store, scanned[SKILL_FILE])
            # Before sync, which would take a half-promoted skill; a repair rescans.
            staged = [f.slug for f in scanned[PROPOSED_FILE]]
            repaired = await reconcile(review, described, staged)
            await catalog.sync(bundled_skills_dir(), described=None if repaired else described)
        config = AgentConfig.of(settings, load_persona(settings))
        health = model_health(settings, clock)
        model = WatchedLLM(llm or make_llm(settings, store), health)
        vision = VisionPolicy(settings.llm_vision, store, model.model)
        memory = (
            Memory(store, known=secrets(settings), clock=clock) if settings.memory == "on" else None
        )
        tools = build_tools(settings, secrets(settings), events=events)
        admins = Admins()
        calibrator = Calibrator(
            store,
            calibration_pairs(settings),
            trusted=settings.trusted_judge_models,
            clock=clock,
            told=partial(tell_unable, store, admins, clock),
            # Every call goes to the on-board model's server: it is the judge, whatever name.
            onboard=settings.llm_local_model is not None,
        )
        agent = Agent(
            FencedAnswers(store) if settings.shared_database else store,
            model,
            catalog,
            config,
            clock=clock,
            vision=vision,
            memory=memory,
            tools=tools,
            health=health,
        )
        learner = make_learner(settings, store) if llm is None else None
        synthesizer = Synthesizer(
            store,
            learner or model,
            catalog,
            review,
            SynthesisConfig.of(settings, settings, secrets(settings)),
            clock=clock,
            embedder=make_embedder(settings),
            judge=make_judge(settings, store) if llm is None else None,
            events=events,
            calibrator=calibrator,
            told_budget=partial(tell_budget, admins, clock),
            answerer=model,
            trial=TrialConfig(
                turns_per_side=settings.trial_turns_per_side,
                calls=settings.trial_calls,
                persona=config.persona,
                skill_index_tokens=config.skill_index_tokens,
                history_tokens=config.history_tokens,
            ),
            trial_calibrator=Calibrator(
                store,
                builtin_compare_pairs(),
                trusted=settings.trusted_judge_models,
                clock=clock,
                told=partial(tell_unable, store, admins, clock),
                onboard=settings.llm_local_model is not None,
            ),
        )
        # Holdout only where still needed, and more often where the comparison lags.
        catalog.settle(*await holdout_state(store, synthesizer.config.effect))
    except BaseException:
        await store.close()
        raise
    worker = (
        SharedInboxWorker(
            store,
            holder=holder,
            lease=settings.inbox_lease_seconds,
            concurrency=settings.max_concurrent_answers,
        )
        if settings.shared_database
        else InboxWorker(store, concurrency=settings.max_concurrent_answers)
    )
    metrics = metrics or Metrics()
    metrics.watch_model(health)
    # Only now: what reconcile repaired above is in the files the catalog synced from.
    subscribe(events, catalog=catalog, admins=admins, metrics=metrics)
    if tools is not None:
        synthesizer.tools = review.tools = tools
        if synthesizer.trial is not None:
            # Offered to a trial's answers as to a private chat's; a call ends the answer.
            synthesizer.trial.functions = partial(trial_functions, tools)
    links = make_links(settings, clock)
    speaker = make_speaker(settings)
    voicing = None if speaker is None else Voicing(speaker, settings, links)
    return Parts(
        settings,
        store,
        agent,
        catalog,
        worker,
        review,
        synthesizer,
        events,
        inbox=Inbox(store, worker, metrics),
        languages=Languages(store, settings.default_language, clock),
        attachments=Attachments(
            settings, vision, make_transcriber(settings), keep_dir=settings.media_dir
        ),
        admins=admins,
        metrics=metrics,
        clock=clock,
        memory=memory,
        tools=tools,
        voicing=voicing,
        links=links,
        health=health,
        transfer=SkillTransfer(settings, review, synthesizer),
    )


def model_health(settings: Settings, clock: Callable[[], float]) -> ModelHealth:
    """The judge of the chat calls' outcomes, with the alert section's window and floor."""
    return ModelHealth(
        window_seconds=settings.model_window_seconds,
        min_calls=settings.alert_model_min_calls,
        share=settings.alert_model_failed_share,
        clock=clock,
    )


async def close_parts(parts: Parts) -> None:
    """Close what `open_parts` opened."""
    await parts.agent.llm.close()
    if parts.tools is not None:
        await parts.tools.stop()
    if parts.attachments.transcriber is not None:
        await parts.attachments.transcriber.close()
    if parts.voicing is not None:
        await parts.voicing.speaker.close()
    if parts.synthesizer.embedder is not None:
        await parts.synthesizer.embedder.close()
    if parts.synthesizer.judge not in (parts.agent.llm, parts.synthesizer.llm):
        await parts.synthesizer.judge.close()
    if parts.synthesizer.llm is not parts.agent.llm:
        await parts.synthesizer.llm.close()
    await parts.store.close()


@asynccontextmanager
async def chat_cards(parts: Parts, *, timeout: float = 30.0) -> AsyncIterator[None]:
    """Chat cards for a terminal command: the channels' clients only (no webhook, no polling)."""
    # A decision or a synthesis made in the terminal reaches the cards before the command ends.
    settings = polling(parts.settings, on=False)
    started: list[Channel] = []
    for channel in configured_channels(settings):  # imports the SDKs in use
        if not channel.profile.audience.admins:
            continue  # no admin to show cards to: not worth starting its client
        try:
            await channel.start(channel_ports(parts, channel))
        except ChannelError as exc:
            log.warning(
                "%s cards are not updated now (%s); the server catches up", channel.name, exc
            )
            continue
        started.append(channel)
    transports = [channel.card_transport() for channel in started]
    cards = start_cards(
        parts.review,
        parts.store,
        transports,
        catch_up=False,
        languages=parts.languages,
        capabilities=capabilities(),
    )
    parts.admins.cards = cards
    try:
        yield
    finally:
        if cards is not None:
            await cards.stop(timeout)
            parts.admins.cards = None
        for channel in reversed(started):
            try:
                await channel.stop()
            except Exception:
                log.exception("stopping %s failed", channel.name)
