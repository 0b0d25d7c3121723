"""The aiohttp application: its routes, /healthz, and the lifecycle of what it runs.

`build_app` opens the parts (`runtime.assembly`), starts the channels with the ports each
uses, the worker, the cards and the schedules, and gives the web handlers the parts they
read; at shutdown it stops them in the reverse order.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from functools import partial

from aiohttp import web
from apscheduler.schedulers.asyncio import AsyncIOScheduler

from gateway import __version__
from gateway.admin.api import admin_api
from gateway.admin.console import SECURITY_HEADERS
from gateway.admin.console_app import add_console
from gateway.admin.metrics import metrics_endpoint
from gateway.channels.base import INTAKE, Channel
from gateway.channels.registry import capabilities, configured_channels
from gateway.config import Settings
from gateway.conversation.dispatch import Conversation
from gateway.core.llm import LLM
from gateway.core.model_health import ModelHealth
from gateway.core.openai_client import uses_openai
from gateway.media.links import ROUTE as LINK_ROUTE
from gateway.media.links import LinkRefused
from gateway.review.delivery import start_cards
from gateway.runtime.alerts import AlertWatcher, WatchedProcess, log_only, looker
from gateway.runtime.assembly import Parts, channel_ports, close_parts, open_parts, task_worker
from gateway.runtime.keys import (
    CATALOG,
    LINKS,
    REVIEW,
    SCHEDULE,
    SETTINGS,
    STORE,
    SYNTHESIZER,
    TASKS,
    TOOLS,
    TRANSFER,
)
from gateway.runtime.metrics import METRICS, Metrics
from gateway.runtime.model_check import look_at_start
from gateway.runtime.replicas import RegistryWatcher
from gateway.runtime.schedule import TaskWorker
from gateway.runtime.scheduler import RetentionSchedule, SynthesisSchedule, every, shut_down
from gateway.runtime.settle import FirstAnswer, freeze_imports, settle
from gateway.store.synthesis import SynthesisQueries
from gateway.web.serving import OWN_BODY, bounded_body

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 1024 * 1024
LINK_SWEEP_SECONDS = 60.0
"""How often files whose signed links expired are deleted."""
BASIC_FRAMING = {"X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff"}


PARTS: web.AppKey[Parts] = web.AppKey("parts")
CHANNELS: web.AppKey[list[Channel]] = web.AppKey("channels")
MODEL_LOOK: web.AppKey[asyncio.Task[bool]] = web.AppKey("model look")
MODEL_PROCESS: web.AppKey[WatchedProcess] = web.AppKey("model process")


async def last_run_started(store: SynthesisQueries) -> float | None:
    """When the newest synthesis pass (on any replica) started."""
    runs = await store.list_runs(1)
    return runs[0].started_at if runs else None


async def healthz(request: web.Request) -> web.Response:
    """Liveness and configuration at a glance; 503 when the database does not answer,
    `degraded` (still 200: the process is alive) while the model's chat calls fail."""
    parts = request.app[PARTS]
    settings = parts.settings
    db_ok = await parts.store.ping()
    model = {
        "configured": settings.model_configured,
        "name": settings.llm_model,
        "answered_at_start": _answered(request.app.get(MODEL_LOOK)),
        **model_state(parts.health),
    }
    process = request.app.get(MODEL_PROCESS)
    if process is not None:
        model["process"] = process.state
        if process.gave_up is not None:
            model["state"] = f"failing: {process.gave_up}"
    degraded = model["state"] != "ok" and model["state"] != "unknown"
    body = {
        "status": ("degraded" if degraded else "ok") if db_ok else "error",
        "version": __version__,
        "database": "ok" if db_ok else "unreachable",
        "channels": {ch.name: ch.health() for ch in request.app[CHANNELS]},
        "model": model,
        "inbox_pending": await parts.store.inbox_pending_count() if db_ok else None,
        "skills_enabled": len(parts.catalog.enabled),
    }
    return web.json_response(body, status=200 if db_ok else 503)


def model_state(health: ModelHealth | None) -> dict[str, object]:
    """The model as its chat calls find it: ok, unknown (no call yet) or failing since when."""
    if health is None or not health.known:
        return {"state": "unknown"}
    failing = health.failing()
    if failing is None:
        return {"state": "ok"}
    since = datetime.fromtimestamp(failing.since, UTC).isoformat(timespec="seconds")
    return {
        "state": f"failing since {since}",
        "failed_calls": f"{failing.failed} of {failing.calls}",
        "last_error": failing.error,
    }


async def media_link(request: web.Request) -> web.StreamResponse:
    """A file the gateway sent by signed link (LINE fetches spoken answers so): 403 for a
    signature that does not match or an expired link, 404 for a file gone (forgotten)."""
    links = request.app.get(LINKS)
    if links is None:
        raise web.HTTPNotFound()
    owner, name = request.match_info["owner"], request.match_info["name"]
    try:
        path, content_type = links.open(owner, name, request.query.get("sig", ""))
    except LinkRefused as exc:
        log.info("a media link was refused: %s", exc)
        raise web.HTTPForbidden() from None
    except FileNotFoundError:
        raise web.HTTPNotFound() from None
    return web.FileResponse(
        path, headers={"Content-Type": content_type, "Cache-Control": "private, no-store"}
    )


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
        speaker = parts.voicing.speaker if parts.voicing is not None else None
        users = (parts.attachments.transcriber, speaker, parts.synthesizer.embedder)
        await settle(
            parts.settings.model_configured,
            parts.catalog.index.build,
            load_openai=uses_openai(*users),
        )


def build_app(
    settings: Settings,
    *,
    llm: LLM | None = None,
    channels: list[Channel] | None = None,
    clock: Callable[[], float] = time.time,
    settle_after_start: bool = False,
    watch: bool = False,
    model_process: WatchedProcess | None = None,
) -> web.Application:
    """The gateway as one aiohttp application; `llm` and `channels` are for tests.

    `settle_after_start` (the server, not tests) freezes start-up objects; see `settle`.
    `watch` (the server) looks at the model at start and watches for outages, telling the
    admins (`runtime.model_check`, `runtime.alerts`). `model_process` is the on-board
    model's server (LLM_LOCAL_MODEL) that `runtime.local_model` keeps running.
    """
    app = web.Application(client_max_size=MAX_BODY_BYTES, middlewares=[bounded_body])
    chans = configured_channels(settings) if channels is None else channels
    # Webhooks check their credentials before they read the body, under the same deadline.
    app[OWN_BODY] = frozenset(route.path for channel in chans for route in channel.routes())
    app[CHANNELS] = chans
    app[SETTINGS] = settings
    if model_process is not None:
        app[MODEL_PROCESS] = model_process
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
        app[LINKS] = parts.links
        assert parts.transfer is not None
        app[TRANSFER] = parts.transfer
        started: list[Channel] = []
        schedule: SynthesisSchedule | None = None
        retention: RetentionSchedule | None = None
        sweeping: AsyncIOScheduler | None = None
        watcher: RegistryWatcher | None = None
        settling: asyncio.Task[None] | None = None
        looking: asyncio.Task[bool] | None = None
        alerting: AlertWatcher | None = None
        tasks: TaskWorker | None = None
        try:
            if parts.tools is not None:
                await parts.tools.start()  # each server within its connect timeout, at once
            conversations: dict[str, Conversation] = {}
            for channel in chans:
                ports = channel_ports(parts, channel)
                parts.worker.handlers[channel.name] = await channel.start(ports)
                conversations[channel.name] = ports.conversation
                started.append(channel)
            await parts.worker.start()
            if settings.shared_database:
                watcher = RegistryWatcher(parts.store, parts.catalog.refresh)
                await watcher.start()
            transports = [channel.card_transport() for channel in started]
            parts.admins.cards = start_cards(
                parts.review,
                parts.store,
                transports,
                languages=parts.languages,
                capabilities=capabilities(),
            )
            # After the channels: a task overdue at start-up (within the grace) goes out now.
            tasks = app[TASKS] = task_worker(parts, started, conversations)
            await tasks.start()
            if watch:
                failures = settings.alert_synthesis_failures
                look = looker(
                    settings, parts.store, failures, parts.tools, parts.health, model_process
                )
                cards = parts.admins.cards
                tell = cards.tell_admins if cards is not None else log_only
                revive = parts.tools.probe if parts.tools is not None else None
                alerting = AlertWatcher(parts.store, look, tell, settings, revive=revive)
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
            if parts.links is not None:
                await parts.links.sweep_now()  # what expired while the gateway was down
                sweeping = every(
                    parts.links.sweep_now,
                    "media links",
                    LINK_SWEEP_SECONDS,
                    time.time() + LINK_SWEEP_SECONDS,  # the scheduler runs on the wall clock
                )
            if settings.retention_days > 0:
                retention = RetentionSchedule(
                    parts.store,
                    settings.retention_days,
                    media=settings.media_dir,
                    review=parts.review,
                )
                retention.start()  # its first pass, now, withdraws what the next line would
            elif withdrawn := await parts.review.withdraw_orphans():
                # A /forget that a crash stopped before its proposals were withdrawn.
                log.warning("withdrew pending proposal(s) %s made from deleted sessions", withdrawn)
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
            await shut_down(sweeping)
            if watcher is not None:
                await watcher.stop()
            log.info("stopping: answers in flight get %.0f s", settings.shutdown_timeout_seconds)
            if tasks is not None:
                await tasks.stop(settings.shutdown_timeout_seconds)
            await parts.worker.stop(settings.shutdown_timeout_seconds)
            if parts.admins.cards is not None:
                await parts.admins.cards.stop()
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
    app.router.add_get(LINK_ROUTE, media_link)
    for channel in chans:
        app.router.add_routes(channel.routes())
    app.add_subapp("/admin/api", admin_api())
    add_console(app)
    return app
