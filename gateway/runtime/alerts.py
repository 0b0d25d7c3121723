"""Admins hear when it breaks: one alert per incident, in their private chats and the log.

Every minute the watcher looks at what users would notice first: the model failing for
SKILLGATE_ALERT_MODEL_MINUTES (its `/models` does not answer, or its chat calls fail, as
`core.model_health` judges them; at once when the on-board model's process is given up),
with what to fix, and again when it is back; no webhook from a configured
platform for SKILLGATE_ALERT_WEBHOOK_HOURS while it has users, free disk under
SKILLGATE_ALERT_DISK_MB, SKILLGATE_ALERT_SYNTHESIS_FAILURES failed passes in a row, and a
tool server down for SKILLGATE_ALERT_TOOL_MINUTES (and again when it is back). Each look
pings the tool servers and starts a dead one again, so one that comes back is seen.
An incident is kept in the store, so a restart neither repeats nor forgets an alert; it
closes when its cause is gone, and the next one is told again. 0 turns a check off.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from gateway.config import AlertSettings, Settings
from gateway.core.model_health import ModelHealth
from gateway.core.ports import Meta
from gateway.i18n import N_
from gateway.runtime.model_check import model_error, what_to_fix
from gateway.runtime.scheduler import every, shut_down
from gateway.shell import as_typed_here
from gateway.synthesis.ports import Locks
from gateway.synthesis.runs import RunRecord

log = logging.getLogger("gateway.alerts")

STATE_KEY = "alerts.incidents"
ALERTS_JOB_ID = "alerts"
EVERY_SECONDS = 60.0
# With replicas on one database, one of them watches at a time: an alert is told once.
LOCK_NAME = "alerts"
LEASE_SECONDS = 3 * EVERY_SECONDS

MODEL_DOWN = N_(
    "⚠️ The model has been failing for {minutes} min: {error}. Users are told it is having"
    " trouble instead of getting answers. What to fix: {fix}"
)
MODEL_BACK = N_("✅ The model answers again (it was down for {minutes} min).")
NO_WEBHOOK = N_(
    "⚠️ No update has arrived from {platform} for {hours} hours, though it has users. Check"
    " its webhook: `skillgate doctor`, then `skillgate set-webhook`."
)
DISK_LOW = N_(
    "⚠️ Only {mb} MB of disk are left for the gateway's data. When it is full, nothing more"
    " is stored: free some space."
)
SYNTHESIS_FAILING = N_(
    "⚠️ The last {n} synthesis passes failed; no skill is learned until one succeeds. The"
    " last error: {error}"
)

TOOL_DOWN = N_(
    "⚠️ The tool server {server} has been unavailable for {minutes} min: {error}. Its"
    " tools are left out of answers until it is back. `skillgate tools list` says more."
)
TOOL_BACK = N_("✅ The tool server {server} is back (it was unavailable for {minutes} min).")

Tell = Callable[..., Awaitable[None]]
"""`tell(message, ref, **values)`: the text to every admin, each in their language."""


async def log_only(message: str, ref: str, /, **values: object) -> None:
    """No admin chat to tell (no bot with admins): the log line is the alert."""


class AlertStore(Meta, Locks, Protocol):
    """The incidents already told (meta), and the lock that lets one replica tell them."""


class SignalStore(Protocol):
    async def inbox_last_received(self, channel: str) -> float | None: ...

    async def has_sessions(self, channel: str) -> bool: ...

    async def list_runs(self, limit: int = 20) -> list[RunRecord]: ...


class ToolServers(Protocol):
    async def probe(self) -> dict[str, str | None]:
        """Each tool server: None when it runs, else why not."""
        ...


class WatchedProcess(Protocol):
    """The on-board model's server, as its supervisor keeps it (`runtime.local_model`)."""

    @property
    def state(self) -> str: ...

    @property
    def gave_up(self) -> str | None:
        """Why it is no longer started again (None: it runs, or is being started)."""
        ...


@dataclass
class Signals:
    """What one look found; None where a check has nothing to say (not configured)."""

    model_error: str | None = None
    model_checked: bool = False
    model_since: float | None = None
    """When the chat calls began to fail (None: the failure is `/models`', seen now)."""
    model_unsure: bool = False
    """`/models` answers, but no chat call was made since the start: the calls say nothing."""
    model_fix: str = ""
    model_given_up: bool = False
    """The on-board model's process is no longer started again: told at once, not after
    SKILLGATE_ALERT_MODEL_MINUTES, since waiting will not mend it."""
    webhook_last: dict[str, float | None] | None = None
    """Per platform in webhook mode with users: when its last update arrived (None: never)."""
    disk_mb: int | None = None
    failed_runs: int = 0
    last_run_error: str | None = None
    tool_servers: dict[str, str | None] | None = None
    """Each configured tool server: None when it runs, else why not (None: no tools)."""


def webhook_platforms(settings: Settings) -> list[str]:
    """The configured platforms whose updates arrive by webhook (one that polls asks itself)."""
    from gateway.channels.registry import configured_platforms

    return [p.name for p in configured_platforms(settings) if not p.polls(settings)]


def looker(
    settings: Settings,
    store: SignalStore,
    limit: int,
    tools: ToolServers | None = None,
    health: ModelHealth | None = None,
    process: WatchedProcess | None = None,
) -> Callable[[], Awaitable[Signals]]:
    """What the watcher looks at, for these settings, this store, these tool servers and
    the outcomes of the model's chat calls (`health`)."""

    async def look() -> Signals:
        seen = Signals(disk_mb=free_mb(settings.data_dir))
        if tools is not None:
            seen.tool_servers = await tools.probe()
        if settings.model_configured:
            seen.model_checked = True
            seen.model_error = await model_error(settings)
            failing = health.failing() if health is not None else None
            if seen.model_error is None and failing is not None:
                seen.model_since = failing.since
                seen.model_error = (
                    f"{failing.failed} of the last {failing.calls} chat calls failed,"
                    f" the last with: {failing.error}"
                )
            if process is not None and process.gave_up is not None:
                seen.model_error, seen.model_given_up = process.gave_up, True
            seen.model_unsure = seen.model_error is None and health is not None and not health.known
            if seen.model_error is not None:
                seen.model_fix = what_to_fix(settings, seen.model_error)
        seen.webhook_last = {
            name: await store.inbox_last_received(name)
            for name in webhook_platforms(settings)
            if await store.has_sessions(name)  # no users yet: silence is expected
        }
        runs = [r for r in await store.list_runs(limit=max(limit, 1)) if r.finished_at]
        for run in runs:
            if run.status != "failed":
                break
            seen.failed_runs += 1
            seen.last_run_error = seen.last_run_error or run.error
        return seen

    return look


def free_mb(path: Path) -> int | None:
    """Free MB on the file system that holds `path` (or would: its nearest existing parent)."""
    path = next((p for p in (path, *path.parents) if p.exists()), path)
    try:
        stats = os.statvfs(path)
    except OSError:
        return None
    return stats.f_bavail * stats.f_frsize // (1024 * 1024)


class AlertWatcher:
    """Opens, tells and closes incidents from the signals `look` returns."""

    def __init__(
        self,
        store: AlertStore,
        look: Callable[[], Awaitable[Signals]],
        tell: Tell,
        thresholds: AlertSettings,
        *,
        clock: Callable[[], float] = time.time,
        revive: Callable[[], Awaitable[object]] | None = None,
    ) -> None:
        self.store, self.look, self.tell = store, look, tell
        self.thresholds, self.clock = thresholds, clock
        self.revive = revive
        """On a replica that does not watch, what keeps its own tool servers alive."""
        self.holder = uuid.uuid4().hex
        self._scheduler: Any = None

    def start(self, interval: float = EVERY_SECONDS) -> None:
        self._scheduler = every(self.tick, ALERTS_JOB_ID, interval, self.clock())

    async def stop(self) -> None:
        await shut_down(self._scheduler)
        self._scheduler = None
        await self.store.release_lock(LOCK_NAME, self.holder)  # the next start takes over

    async def tick(self) -> None:
        try:
            if not await self.store.acquire_lock(
                LOCK_NAME, self.holder, self.clock(), LEASE_SECONDS
            ):
                # Another replica watches and tells; this one's tool servers are its own.
                if self.revive is not None:
                    await self.revive()
                return
            await self.check(await self.look())
        except asyncio.CancelledError:
            # The server stops while a look is under way (it waits on the model): nothing
            # failed, and the scheduler would log the cancellation as an ERROR traceback.
            log.debug("the alert check was cut short by the shutdown")
        except Exception:
            log.exception("the alert check failed; the next one tries again")

    async def check(self, seen: Signals) -> None:
        """Compare what was seen with the open incidents; tell what opened or came back."""
        state: dict[str, dict[str, Any]] = json.loads(await self.store.get_meta(STATE_KEY) or "{}")
        now, t = self.clock(), self.thresholds
        if t.alert_model_minutes > 0 and seen.model_checked:
            await self._model(state, seen, now)
        if t.alert_tool_minutes > 0 and seen.tool_servers is not None:
            await self._tools(state, seen.tool_servers, now)
        for platform, last in (
            (seen.webhook_last or {}).items() if t.alert_webhook_hours > 0 else ()
        ):
            await self._webhook(state, platform, last, now)
        if t.alert_disk_mb > 0 and seen.disk_mb is not None:
            low = seen.disk_mb < t.alert_disk_mb
            await self._once(state, "disk", low, now, DISK_LOW, mb=seen.disk_mb)
        if t.alert_synthesis_failures > 0:
            failing = seen.failed_runs >= t.alert_synthesis_failures
            error = seen.last_run_error or "-"
            await self._once(
                state, "synthesis", failing, now, SYNTHESIS_FAILING, n=seen.failed_runs, error=error
            )
        await self.store.set_meta(STATE_KEY, json.dumps(state, sort_keys=True))

    async def _model(self, state: dict[str, dict[str, Any]], seen: Signals, now: float) -> None:
        if seen.model_unsure and state.get("model", {}).get("calls"):
            # The chat calls failed before a restart and none was made since: still open.
            return
        limit = 0 if seen.model_given_up else self.thresholds.alert_model_minutes
        error, since = seen.model_error, seen.model_since
        await self._outage(
            state,
            "model",
            error,
            now,
            limit,
            MODEL_DOWN,
            MODEL_BACK,
            since=since,
            fix=seen.model_fix or "`skillgate doctor` checks the model",
        )
        if since is not None and "model" in state:
            state["model"]["calls"] = True

    async def _tools(
        self, state: dict[str, dict[str, Any]], servers: dict[str, str | None], now: float
    ) -> None:
        for key in [k for k in state if k.startswith("tool:")]:
            if key.removeprefix("tool:") not in servers:
                state.pop(key)  # no longer configured: nothing to be back from
        limit = self.thresholds.alert_tool_minutes
        for name, error in servers.items():
            messages = (TOOL_DOWN, TOOL_BACK)
            await self._outage(state, f"tool:{name}", error, now, limit, *messages, server=name)

    async def _outage(
        self,
        state: dict[str, dict[str, Any]],
        key: str,
        error: str | None,
        now: float,
        minutes: float,
        down: str,
        back: str,
        since: float | None = None,
        fix: str | None = None,
        **values: object,
    ) -> None:
        """Told once when down for `minutes` (since `since`, or since first seen), and once
        when back (only if it was told)."""
        open_ = state.get(key)
        if error is None:
            if open_ is not None and open_.get("told"):
                lasted = round((now - open_["since"]) / 60)
                await self._say(f"{key}-back", back, open_["since"], minutes=lasted, **values)
            state.pop(key, None)
            return
        if open_ is None:
            state[key] = open_ = {"since": min(since or now, now), "told": False}
        waited = (now - open_["since"]) / 60
        if not open_["told"] and waited >= minutes:
            open_["told"] = True
            lasted = round(waited)
            extra = {"fix": fix} if fix is not None else {}
            # The message ends the error's sentence itself: "unavailable.." reads as a typo.
            said = error.rstrip(". ")
            await self._say(
                key, down, open_["since"], minutes=lasted, error=said, **extra, **values
            )

    async def _webhook(
        self, state: dict[str, dict[str, Any]], platform: str, last: float | None, now: float
    ) -> None:
        key = f"webhook:{platform}"
        open_ = state.setdefault(key, {"since": now, "told": False, "last": None})
        # The inbox forgets processed updates after a while: keep the latest one ever seen.
        if last is not None and (open_["last"] is None or last > open_["last"]):
            if open_["told"]:
                open_["told"] = False  # updates arrive again: the incident is over
            open_["last"] = last
        quiet_since = open_["last"] if open_["last"] is not None else open_["since"]
        hours = (now - quiet_since) / 3600
        if not open_["told"] and hours >= self.thresholds.alert_webhook_hours:
            open_["told"] = True
            hours_shown = round(hours)
            await self._say(key, NO_WEBHOOK, quiet_since, platform=platform, hours=hours_shown)

    async def _once(
        self,
        state: dict[str, dict[str, Any]],
        kind: str,
        on: bool,
        now: float,
        message: str,
        **values: object,
    ) -> None:
        if not on:
            state.pop(kind, None)
            return
        if kind not in state:
            state[kind] = {"since": now, "told": True}
            await self._say(kind, message, now, **values)

    async def _say(self, kind: str, message: str, since: float, **values: object) -> None:
        log.warning("alert %s: %s", kind, as_typed_here(message.format(**values)))
        try:
            await self.tell(message, f"alert:{kind}:{since:.0f}", **values)
        except Exception:
            log.exception("telling the admins about %s failed", kind)
