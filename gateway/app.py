"""Builds the aiohttp application and wires every part; the one module that knows them all.

`open_parts` opens the store and builds what runs on it; `build_app` starts the
channels with the ports each uses (the inbox door, its conversation, its delivery
records) and gives the web handlers the parts they read, under one lifecycle.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, nullcontext
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from aiohttp import web

from gateway import __version__
from gateway.admin.api import admin_api
from gateway.admin.console import SECURITY_HEADERS
from gateway.admin.console_app import add_console
from gateway.admin.metrics import metrics_endpoint
from gateway.channels.base import INTAKE, Channel, Ports
from gateway.channels.registry import by_name, capabilities, configured_channels, polling
from gateway.config import Settings
from gateway.conversation.attachments import Attachments
from gateway.conversation.dispatch import Conversation
from gateway.conversation.language import Languages
from gateway.conversation.ports import ConversationPorts
from gateway.core.agent import Agent, AgentConfig
from gateway.core.embeddings import Embedder, OpenAIEmbeddings
from gateway.core.fallback import FallbackLLM, parse_fallbacks
from gateway.core.json_modes import JsonModeMemory
from gateway.core.llm import LLM, OpenAIChat, UnconfiguredLLM
from gateway.core.memory import Memory
from gateway.core.prompt import DEFAULT_PERSONA
from gateway.core.tools import ToolCallRecord
from gateway.core.vision import VisionPolicy
from gateway.errors import ChannelError
from gateway.media.remote import MB, MediaLimits
from gateway.media.stt import OpenAITranscriber, Transcriber
from gateway.review.delivery import ReviewCards, start_cards
from gateway.review.events import ReviewEvent
from gateway.review.proposals import PROPOSED_FILE, Proposal
from gateway.review.reconcile import reconcile
from gateway.review.reviewer import Reviewer
from gateway.runtime.alerts import AlertWatcher, Thresholds, log_only, looker
from gateway.runtime.inbox import Inbox, InboxWorker
from gateway.runtime.keys import CATALOG, REVIEW, SCHEDULE, SETTINGS, STORE, SYNTHESIZER, TOOLS
from gateway.runtime.metrics import METRICS, Metrics
from gateway.runtime.model_check import look_at_start
from gateway.runtime.replicas import (
    RegistryWatcher,
    SharedInboxWorker,
    check_skills_volume,
    replica_name,
    startup_lock,
)
from gateway.runtime.scheduler import RetentionSchedule, SynthesisSchedule
from gateway.runtime.settle import FirstAnswer, freeze_imports, settle
from gateway.skills.catalog import SkillCatalog, bundled_skills_dir
from gateway.skills.effect import EffectThresholds, holdout_state
from gateway.skills.files import describe_files
from gateway.skills.library import SKILL_FILE, SkillLibrary
from gateway.store import Store, open_store
from gateway.store.synthesis import SynthesisQueries
from gateway.synthesis.synthesizer import RunSummary, SynthesisConfig, Synthesizer
from gateway.tools.build import build_tools
from gateway.tools.toolbox import Tools
from gateway.web.serving import OWN_BODY, bounded_body

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 1024 * 1024
BASIC_FRAMING = {"X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff"}


@dataclass
class Parts:
    """What `open_parts` opened, for the one place that wires them (and for tests to look at).

    No component is given this: each gets the parts it uses.
    """

    settings: Settings
    store: Store
    agent: Agent
    catalog: SkillCatalog
    worker: InboxWorker
    review: Reviewer
    synthesizer: Synthesizer
    metrics: Metrics = field(default_factory=Metrics)
    clock: Callable[[], float] = time.time
    cards: ReviewCards | None = None
    """Proposal cards for chat admins, once the channels have started (None without admins)."""
    attachments: Attachments | None = None
    """Reads voice notes, photos and documents for every channel's conversation."""
    memory: Memory | None = None
    """Per-user memory (None when SKILLGATE_MEMORY is off)."""
    tools: Tools | None = None
    """MCP servers and web tools from the tools file (None: none configured)."""
    inbox: Inbox = field(init=False)
    """The inbox door the webhooks store updates through."""
    languages: Languages = field(init=False)
    """The language of each chat's fixed texts."""

    def __post_init__(self) -> None:
        self.inbox = Inbox(self.store, self.worker, self.metrics)
        self.languages = Languages(self.store, self.settings.default_language, self.clock)

    def ports(self, channel: Channel) -> Ports:
        """What one channel is given when it starts."""
        conversation = Conversation(
            channel.profile,
            ConversationPorts(
                store=self.store,
                turns=self.agent,
                counts=self.metrics,
                review=self.review,
                synthesis=self.synthesizer,
                languages=self.languages,
                alerts=self.tell_admins,
                attachments=self.attachments,
                memory=self.memory,
                clock=self.clock,
            ),
            self.settings,
            secrets=self.settings.secrets(),
        )
        return Ports(
            intake=self.inbox,
            conversation=conversation,
            deliveries=self.store,
            claims=self.worker,
        )

    async def review_effects(self, event: ReviewEvent) -> None:
        """What follows every review operation: the skill index, the log, each admin's card."""
        if event.skill is not None:
            self.catalog.apply(event.skill, event.text)  # the next prompt has it
        if event.proposal is not None:
            log_review_event(event.proposal, event.kind)
            if self.cards is not None:
                self.cards.on_review_event(event.kind, event.proposal)

    def after_pass(self, summary: RunSummary) -> None:
        """A pass that found rejections repeated: its notice goes to the chat admins."""
        if summary.repeats and self.cards is not None:
            self.cards.repeats_found()

    async def tell_admins(self, message: str, ref: str, /, **values: object) -> None:
        """A fixed text to every chat admin, once the cards' transports have started."""
        if self.cards is not None:
            await self.cards.tell_admins(message, ref, **values)


PARTS: web.AppKey[Parts] = web.AppKey("parts")
CHANNELS: web.AppKey[list[Channel]] = web.AppKey("channels")
MODEL_LOOK: web.AppKey[asyncio.Task[bool]] = web.AppKey("model look")


def make_llm(settings: Settings, json_memory: JsonModeMemory | None = None) -> LLM:
    """The configured model (and its fallbacks), or a stand-in that answers 'not configured'."""
    if not settings.model_configured:
        return UnconfiguredLLM()
    assert settings.llm_base_url is not None and settings.llm_model is not None
    key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
    keys = settings.llm_fallback_api_keys
    fallbacks = parse_fallbacks(
        settings.llm_fallback_models,
        keys.get_secret_value().split(",") if keys else [],
        settings.llm_base_url,
        key,
    )
    chain = [(settings.llm_model, settings.llm_base_url, key), *fallbacks]
    models: list[LLM] = [
        chat_client(settings, url, model, model_key, json_memory) for model, url, model_key in chain
    ]
    return models[0] if len(models) == 1 else FallbackLLM(models)


def make_judge(settings: Settings, json_memory: JsonModeMemory | None = None) -> LLM | None:
    """The model asked whether a candidate repeats a known claim, when not LLM_MODEL itself."""
    if settings.llm_same_claim_model is None or not settings.model_configured:
        return None
    assert settings.llm_base_url is not None
    key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
    return chat_client(
        settings, settings.llm_base_url, settings.llm_same_claim_model, key, json_memory
    )


def chat_client(
    settings: Settings, url: str, model: str, key: str | None, json_memory: JsonModeMemory | None
) -> OpenAIChat:
    """One model at one endpoint, with the timeouts, retries and stream bounds of the settings."""
    return OpenAIChat(
        url,
        model,
        key,
        timeout=settings.llm_timeout_seconds,
        idle_timeout=settings.llm_idle_timeout_seconds,
        max_retries=settings.llm_max_retries,
        max_tokens=settings.llm_max_tokens,
        json_memory=json_memory,
        stream_seconds=settings.llm_stream_max_seconds,
        stream_bytes=int(settings.llm_stream_max_mb * MB),
    )


def alert_thresholds(settings: Settings) -> Thresholds:
    return Thresholds(
        model_minutes=settings.alert_model_minutes,
        webhook_hours=settings.alert_webhook_hours,
        disk_mb=settings.alert_disk_mb,
        synthesis_failures=settings.alert_synthesis_failures,
        tool_minutes=settings.alert_tool_minutes,
    )


def make_transcriber(settings: Settings) -> Transcriber | None:
    """Speech-to-text at STT_BASE_URL (default: the LLM's endpoint and key), if STT_MODEL is set."""
    if not settings.stt_configured:
        return None
    base = settings.stt_base_url or settings.llm_base_url
    assert base is not None and settings.stt_model is not None
    key = settings.stt_api_key or (settings.llm_api_key if base == settings.llm_base_url else None)
    return OpenAITranscriber(
        base,
        settings.stt_model,
        key.get_secret_value() if key else None,
        timeout=settings.stt_timeout_seconds,
    )


def media_limits(settings: Settings) -> MediaLimits:
    """How much of each attachment kind is read, from the settings."""
    return MediaLimits(
        voice_bytes=int(settings.max_voice_mb * MB),
        image_bytes=int(settings.max_image_mb * MB),
        document_bytes=int(settings.max_document_mb * MB),
        seconds=settings.media_timeout_seconds,
        max_pixels=settings.max_image_pixels,
        max_pdf_pages=settings.max_pdf_pages,
        document_tokens=settings.document_tokens,
        keep_dir=settings.media_dir,
        decode_memory_bytes=settings.decode_memory_mb * MB,
        decode_seconds=settings.decode_seconds,
        voice_seconds=settings.max_voice_seconds,
        downloads=settings.max_downloads,
        held_bytes=settings.download_memory_mb * MB,
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
    try:
        library = SkillLibrary(settings.skills_dir)
        catalog = SkillCatalog(library, store)
        review = Reviewer(
            library,
            store,
            require_approval=settings.require_approval,
            clock=clock,
            users=by_name(),
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
        config = AgentConfig(
            persona=load_persona(settings),
            session_idle_seconds=settings.session_idle_minutes * 60,
            skill_index_tokens=settings.skill_index_tokens,
            history_tokens=settings.history_tokens,
            skill_holdout=settings.skill_holdout,
            skill_holdout_start=settings.skill_holdout_start,
        )
        model = llm or make_llm(settings, store)
        vision = VisionPolicy(settings.llm_vision, store, model.model)
        memory = (
            Memory(store, known=settings.secrets(), clock=clock)
            if settings.memory == "on"
            else None
        )
        tools = build_tools(settings)
        agent = Agent(
            store, model, catalog, config, clock=clock, vision=vision, memory=memory, tools=tools
        )
        synthesizer = Synthesizer(
            store,
            model,
            catalog,
            review,
            synthesis_config(settings),
            clock=clock,
            embedder=make_embedder(settings),
            judge=make_judge(settings, store) if llm is None else None,
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
    parts = Parts(
        settings, store, agent, catalog, worker, review, synthesizer, metrics or Metrics(), clock
    )
    parts.memory = memory
    review.effects = parts.review_effects
    synthesizer.listeners.append(parts.after_pass)
    parts.attachments = Attachments(media_limits(settings), vision, make_transcriber(settings))
    if tools is not None:
        parts.tools = tools
        tools.listeners.append(partial(count_tool_call, parts))
        synthesizer.tools = review.tools = tools
    return parts


async def count_tool_call(parts: Parts, name: str, record: ToolCallRecord) -> None:
    """A tool call in /metrics (the day's usage counts it with the answer that made it)."""
    parts.metrics.tool_called(name, record.status)


def make_embedder(settings: Settings) -> Embedder | None:
    """Embeddings from the model's endpoint when `LLM_EMBEDDING_MODEL` names a model there."""
    if settings.llm_embedding_model is None or settings.llm_base_url is None:
        return None
    key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
    return OpenAIEmbeddings(
        settings.llm_base_url,
        settings.llm_embedding_model,
        key,
        timeout=settings.llm_timeout_seconds,
    )


def synthesis_config(settings: Settings) -> SynthesisConfig:
    """The synthesizer's knobs from the settings."""
    return SynthesisConfig(
        max_proposals=settings.max_proposals_per_run,
        similarity_threshold=settings.similarity_threshold,
        batch_sessions=settings.synthesis_batch_sessions,
        batch_tokens=settings.synthesis_batch_tokens,
        max_skill_bytes=settings.max_skill_bytes,
        temperature=settings.synthesis_temperature,
        session_idle_seconds=settings.session_idle_minutes * 60,
        secrets=tuple(settings.secrets()),
        comparands=settings.same_claim_comparands,
        evidence_window_seconds=settings.evidence_window_days * 86400,
        context_tokens=settings.llm_context_tokens,
        effect=EffectThresholds(
            min_evidence=settings.retire_min_evidence,
            margin=settings.retire_margin,
            alpha=settings.retire_false_alarms,
        ),
    )


async def last_run_started(store: SynthesisQueries) -> float | None:
    """When the newest synthesis pass (on any replica) started."""
    runs = await store.list_runs(1)
    return runs[0].started_at if runs else None


def log_review_event(p: Proposal, kind: str) -> None:
    """Every staged proposal and every decision reaches the log."""
    what = "staged for review" if kind == "staged" else p.status
    by = f" by {p.decided_by}" if p.decided_by and kind == "decided" else ""
    log.info("proposal #%d (%s %s) %s%s", p.id, p.kind, p.slug, what, by)


async def close_parts(parts: Parts) -> None:
    """Close what `open_parts` opened."""
    await parts.agent.llm.close()
    if parts.tools is not None:
        await parts.tools.stop()
    if parts.attachments is not None and parts.attachments.transcriber is not None:
        await parts.attachments.transcriber.close()
    if parts.synthesizer.embedder is not None:
        await parts.synthesizer.embedder.close()
    if parts.synthesizer.judge is not parts.agent.llm:
        await parts.synthesizer.judge.close()
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
            await channel.start(parts.ports(channel))
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
    parts.cards = cards
    try:
        yield
    finally:
        if cards is not None:
            await cards.stop(timeout)
            parts.cards = None
        for channel in reversed(started):
            try:
                await channel.stop()
            except Exception:
                log.exception("stopping %s failed", channel.name)


async def healthz(request: web.Request) -> web.Response:
    """Liveness and configuration at a glance; 503 when the database does not answer."""
    parts = request.app[PARTS]
    settings = parts.settings
    db_ok = await parts.store.ping()
    body = {
        "status": "ok" if db_ok else "error",
        "version": __version__,
        "database": "ok" if db_ok else "unreachable",
        "channels": {ch.name: ch.health() for ch in request.app[CHANNELS]},
        "model": {
            "configured": settings.model_configured,
            "name": settings.llm_model,
            "answered_at_start": _answered(request.app.get(MODEL_LOOK)),
        },
        "inbox_pending": await parts.store.inbox_pending_count() if db_ok else None,
        "skills_enabled": len(parts.catalog.enabled),
    }
    return web.json_response(body, status=200 if db_ok else 503)


def _answered(look: asyncio.Task[bool] | None) -> bool | None:
    """Whether the model answered serve's look at start; None until it is known."""
    if look is None or not look.done() or look.cancelled():
        return None
    return look.result()


async def framing_headers(request: web.Request, response: web.StreamResponse) -> None:
    """Every answer, errors and 405s included, refuses framing and content sniffing.

    Under /admin the console's full policy applies to what its pages did not set
    themselves (the router's own 404s and 405s, redirects to the sign-in page).
    """
    wanted = SECURITY_HEADERS if request.path.startswith("/admin") else BASIC_FRAMING
    for name, value in wanted.items():
        response.headers.setdefault(name, value)


async def after_first_answer(
    first: FirstAnswer, parts: Parts, alerting: AlertWatcher | None, settles: bool
) -> None:
    """The alerts' first look and the settling, once /healthz or a webhook was answered:
    started earlier, either would hold up that first answer (see `runtime.settle`)."""
    await first.sent()
    if alerting is not None:
        alerting.start()
    if settles:
        await settle(parts.settings.model_configured, parts.catalog.index.build)


def build_app(
    settings: Settings,
    *,
    llm: LLM | None = None,
    channels: list[Channel] | None = None,
    clock: Callable[[], float] = time.time,
    settle_after_start: bool = False,
    watch: bool = False,
) -> web.Application:
    """The gateway as one aiohttp application; `llm` and `channels` are for tests.

    `settle_after_start` (the server, not tests) freezes start-up objects; see `settle`.
    `watch` (the server) looks at the model at start and watches for outages, telling the
    admins (`runtime.model_check`, `runtime.alerts`).
    """
    app = web.Application(client_max_size=MAX_BODY_BYTES, middlewares=[bounded_body])
    chans = configured_channels(settings) if channels is None else channels
    # Webhooks check their credentials before they read the body, under the same deadline.
    app[OWN_BODY] = frozenset(route.path for channel in chans for route in channel.routes())
    app[CHANNELS] = chans
    app[SETTINGS] = settings
    metrics = app[METRICS] = Metrics()
    first = FirstAnswer()

    async def first_answer(_request: web.Request, _response: web.StreamResponse) -> None:
        first.answered()

    async def lifecycle(app: web.Application) -> AsyncIterator[None]:
        if settle_after_start:
            freeze_imports()
        parts = await open_parts(settings, llm=llm, clock=clock, metrics=metrics)
        app[PARTS], app[STORE], app[INTAKE] = parts, parts.store, parts.inbox
        app[REVIEW], app[SYNTHESIZER], app[CATALOG] = parts.review, parts.synthesizer, parts.catalog
        app[TOOLS] = parts.tools
        started: list[Channel] = []
        schedule: SynthesisSchedule | None = None
        retention: RetentionSchedule | None = None
        watcher: RegistryWatcher | None = None
        settling: asyncio.Task[None] | None = None
        looking: asyncio.Task[bool] | None = None
        alerting: AlertWatcher | None = None
        try:
            if parts.tools is not None:
                await parts.tools.start()  # each server within its connect timeout, at once
            for channel in chans:
                parts.worker.handlers[channel.name] = await channel.start(parts.ports(channel))
                started.append(channel)
            await parts.worker.start()
            if settings.shared_database:
                watcher = RegistryWatcher(parts.store, parts.catalog.refresh)
                await watcher.start()
            transports = [channel.card_transport() for channel in started]
            parts.cards = start_cards(
                parts.review,
                parts.store,
                transports,
                languages=parts.languages,
                capabilities=capabilities(),
            )
            if watch:
                limits = alert_thresholds(settings)
                look = looker(settings, parts.store, limits.synthesis_failures, parts.tools)
                tell = parts.cards.tell_admins if parts.cards is not None else log_only
                revive = parts.tools.probe if parts.tools is not None else None
                alerting = AlertWatcher(parts.store, look, tell, limits, revive=revive)
            if settings.synthesis_interval_minutes > 0:
                schedule = SynthesisSchedule(
                    parts.synthesizer,
                    settings.synthesis_interval_minutes,
                    last_started=partial(last_run_started, parts.store)
                    if settings.shared_database
                    else None,
                )
                schedule.start(await last_run_started(parts.store))
            app[SCHEDULE] = schedule
            if settings.retention_days > 0:
                retention = RetentionSchedule(
                    parts.store, settings.retention_days, media=settings.media_dir
                )
                retention.start()
            log.info(
                "skillgate %s ready: channels=%s model=%s",
                __version__,
                ",".join(c.name for c in chans) or "none",
                settings.llm_model or "not configured",
            )
            if watch or settle_after_start:
                settling = asyncio.create_task(
                    after_first_answer(first, parts, alerting, settle_after_start), name="settle"
                )
            if watch:  # one look at the model, in the background: serve starts anyway
                looking = asyncio.create_task(
                    first.then(partial(look_at_start, settings, parts.synthesizer)),
                    name="model check",
                )
                app[MODEL_LOOK] = looking
            yield
        finally:
            if settling is not None:
                settling.cancel()
            if alerting is not None:
                await alerting.stop()
            if looking is not None:
                looking.cancel()
            if schedule is not None:
                await schedule.stop()
            if retention is not None:
                await retention.stop()
            if watcher is not None:
                await watcher.stop()
            log.info("stopping: answers in flight get %.0f s", settings.shutdown_timeout_seconds)
            await parts.worker.stop(settings.shutdown_timeout_seconds)
            if parts.cards is not None:
                await parts.cards.stop()
            for channel in reversed(started):
                try:
                    await channel.stop()
                except Exception:
                    log.exception("stopping %s failed", channel.name)
            await close_parts(parts)

    app.cleanup_ctx.append(lifecycle)
    app.on_response_prepare.append(framing_headers)
    app.on_response_prepare.append(first_answer)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics_endpoint)
    for channel in chans:
        app.router.add_routes(channel.routes())
    app.add_subapp("/admin/api", admin_api())
    add_console(app)
    return app
