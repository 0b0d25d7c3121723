"""The toolbox: every configured server's tools as `<server>__<tool>`, under their policies.

It implements the core's `Toolbox` port. A call is checked against its tool's policy again
(offering it is not permission), confirmed by the user where the policy says so, bounded
in time, and its result capped and fenced before the model reads it. Each call ends in a
`ToolCallRecord` for the trace, published as `ToolCalled` (/metrics); the day's usage counts
it with the answer that made it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gateway.config import ToolsSettings
from gateway.core.events import Events, ToolCalled
from gateway.core.llm_wire import one_line
from gateway.core.models import Picture
from gateway.core.tools import (
    CONFIRM_CHARS,
    ToolAccess,
    ToolCallRecord,
    ToolInfo,
    ToolOutcome,
    ToolSpec,
    ToolStatus,
)
from gateway.logs import mask
from gateway.tools.image import ImageTool
from gateway.tools.policy import (
    Backend,
    CallFailed,
    CallRefused,
    RemoteTool,
    Rule,
    ServerUnavailable,
    asks,
    refusal,
)
from gateway.tools.results import asked_call, canonical, cap, fenced_result, masked_arguments
from gateway.tools.schedule import ScheduleTool

log = logging.getLogger(__name__)
SEPARATOR = "__"
FUNCTION_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""What chat-completions servers accept as a function name: other tools are left out."""
DESCRIPTION_CHARS = 1024


@dataclass(frozen=True)
class Mounted:
    """A backend, the rule for each of its tools, and whether its names carry its own."""

    backend: Backend
    rule: Callable[[RemoteTool], Rule]
    prefixed: bool = True


@dataclass(frozen=True)
class Entry:
    """One tool as this gateway offers it."""

    name: str
    mounted: Mounted
    tool: RemoteTool
    rule: Rule


@dataclass(frozen=True)
class ServerStatus:
    """One backend as operators see it: running or why not, its tools and their policies."""

    name: str
    transport: str
    alive: bool
    error: str | None
    tools: list[tuple[str, str, bool, bool]]
    """(name as offered, policy, groups allowed, read-only) of each tool it lists."""


@dataclass
class Tools:
    """The configured tools, their servers started and stopped with the gateway."""

    mounted: list[Mounted]
    settings: ToolsSettings = field(default_factory=ToolsSettings)
    """How long a call may take, how much of its result the model reads."""
    secrets: tuple[str, ...] = ()
    events: Events = field(default_factory=Events)
    """Told of every call once it ended (/metrics)."""
    _skipped: set[tuple[str, str]] = field(default_factory=set)

    async def start(self) -> None:
        """Start every server at once; one that fails is left out, with its reason."""
        await asyncio.gather(*(m.backend.start() for m in self.mounted))

    async def stop(self) -> None:
        await asyncio.gather(*(m.backend.stop() for m in self.mounted), return_exceptions=True)

    async def probe(self) -> dict[str, str | None]:
        """Each server after a look (a ping; a dead one started again): None, or why it is down."""
        ended = await asyncio.gather(
            *(m.backend.probe() for m in self.mounted), return_exceptions=True
        )
        for m, result in zip(self.mounted, ended, strict=True):
            if isinstance(result, BaseException):
                log.warning("looking at tool server %s failed: %r", m.backend.name, result)
        return {
            m.backend.name: None if m.backend.alive else (m.backend.error or "not running")
            for m in self.mounted
        }

    def entries(self) -> list[Entry]:
        """Every tool of every live backend, with its rule (names a model accepts, once each)."""
        found: dict[str, Entry] = {}
        for mounted in self.mounted:
            backend = mounted.backend
            if not backend.alive:
                continue
            for tool in backend.tools:
                name = f"{backend.name}{SEPARATOR}{tool.name}" if mounted.prefixed else tool.name
                if not FUNCTION_NAME.match(name) or name in found:
                    if (backend.name, tool.name) not in self._skipped:
                        self._skipped.add((backend.name, tool.name))
                        log.warning("tool %r of %s left out: not a usable name", name, backend.name)
                    continue
                found[name] = Entry(name, mounted, tool, mounted.rule(tool))
        return list(found.values())

    def status(self) -> list[ServerStatus]:
        """Every backend, running or not (`skillgate tools list`, doctor, the console)."""
        listed = self.entries()
        return [
            ServerStatus(
                name=m.backend.name,
                transport=m.backend.transport,
                alive=m.backend.alive,
                error=m.backend.error,
                tools=[
                    (e.name, e.rule.policy, e.rule.groups, e.tool.read_only)
                    for e in listed
                    if e.mounted is m
                ],
            )
            for m in self.mounted
        ]

    def directory(self) -> list[ToolInfo]:
        """Every live tool with its policy, for synthesis (names only, never arguments)."""
        return [ToolInfo(e.name, e.rule.policy, e.tool.read_only) for e in self.entries()]

    def offer(self, access: ToolAccess) -> list[ToolSpec]:
        return [
            ToolSpec(e.name, e.tool.description[:DESCRIPTION_CHARS], e.tool.schema)
            for e in self.entries()
            if refusal(e.rule, access, self.settings.tool_admin_confirm) is None
            and (access.schedule is not None or not isinstance(e.mounted.backend, ScheduleTool))
        ]

    def over_limit(self, name: str, turn_calls: int, round_calls: int) -> ToolOutcome | None:
        """A refusal for a call past this turn's or this round's number of calls (which the
        model is told), else None; `turn_calls` and `round_calls` were made before it."""
        per_round, per_turn = self.settings.tool_calls_per_round, self.settings.tool_calls_per_turn
        if round_calls < per_round and turn_calls < per_turn:
            return None
        why = (
            f"at most {per_round} tool calls at once (SKILLGATE_TOOL_CALLS_PER_ROUND)"
            if round_calls >= per_round
            else f"at most {per_turn} tool calls per message (SKILLGATE_TOOL_CALLS_PER_TURN)"
        )
        server, _, tool = name.rpartition(SEPARATOR) if SEPARATOR in name else ("", "", name)
        record = ToolCallRecord(server=server, tool=tool, arguments="", status="ok")
        return _ended(record, "refused", f"{why}: this call was not made")

    async def call(self, name: str, arguments: dict[str, Any], access: ToolAccess) -> ToolOutcome:
        entry = next((e for e in self.entries() if e.name == name), None)
        server, _, tool = name.rpartition(SEPARATOR) if SEPARATOR in name else ("", "", name)
        if entry is not None:
            server, tool = entry.mounted.backend.name, entry.tool.name
        record = ToolCallRecord(
            server=server,
            tool=tool,
            arguments=masked_arguments(arguments, self.secrets),
            status="ok",
        )
        outcome = await self._call(entry, name, arguments, access, record)
        await self.events.publish(ToolCalled(name, outcome.record))
        return outcome

    async def _call(
        self,
        entry: Entry | None,
        name: str,
        arguments: dict[str, Any],
        access: ToolAccess,
        record: ToolCallRecord,
    ) -> ToolOutcome:
        if entry is None:
            return _ended(record, "unavailable", "the tool is not available now")
        # Offered is not allowed: the rule is read again for this very call.
        reason = refusal(entry.rule, access, self.settings.tool_admin_confirm)
        if reason is not None:
            return _ended(record, "refused", reason)
        if isinstance(entry.mounted.backend, ImageTool) and access.may_draw is not None:
            over = await access.may_draw()
            if over is not None:
                return _ended(record, "refused", over)
        if asks(entry.rule, self.settings.tool_admin_confirm):
            assert access.confirm is not None  # refusal() says so otherwise
            text = canonical(arguments)
            asked = asked_call(name, text, self.secrets)
            if asked is None:
                why = f"its arguments are too long to show for confirmation ({CONFIRM_CHARS:,}"
                return _ended(record, "refused", why + " characters at most)")
            if not await access.confirm(name, asked):
                return _ended(record, "declined", "the user did not allow this call")
            arguments = json.loads(text)  # exactly what was shown and signed for
        if isinstance(entry.mounted.backend, ScheduleTool):
            return await self._schedule(record, arguments, access)
        started = time.monotonic()
        pictures: tuple[Picture, ...] = ()
        try:
            async with asyncio.timeout(self._timeout(entry)):
                backend = entry.mounted.backend
                if isinstance(backend, ImageTool):
                    drawn = await backend.draw(arguments)
                    text, failed, pictures = drawn.text, False, (drawn.picture,)
                else:
                    text, failed = await backend.call(entry.tool.name, arguments)
        except TimeoutError:
            why = f"no answer within {self._timeout(entry):g} s"
            return _ended(record, "timeout", why, started)
        except ServerUnavailable as exc:
            return _ended(record, "unavailable", f"the server is unavailable: {exc}", started)
        except CallRefused as exc:
            return _ended(record, "refused", str(exc), started)
        except CallFailed as exc:
            return _ended(record, "error", str(exc), started)
        except Exception as exc:
            log.warning("tool %s failed: %s", name, one_line(mask(repr(exc), self.secrets)))
            return _ended(record, "error", f"the call failed ({type(exc).__name__})", started)
        shown, capped = cap(text, self.settings.tool_result_chars)
        record = record.model_copy(
            update={
                "status": "error" if failed else "ok",
                "duration_ms": _ms(started),
                "result_chars": len(text),
                "capped": capped,
            }
        )
        return ToolOutcome(fenced_result(name, shown), record, pictures)

    async def _schedule(
        self, record: ToolCallRecord, arguments: dict[str, Any], access: ToolAccess
    ) -> ToolOutcome:
        """A `schedule` call, made by the turn for its user (its own store writes only)."""
        if access.schedule is None:
            return _ended(record, "refused", "no task can be scheduled from here")
        started = time.monotonic()
        text, refused = await access.schedule(arguments)
        if refused:
            return _ended(record, "refused", text, started)
        record = record.model_copy(update={"duration_ms": _ms(started), "result_chars": len(text)})
        return ToolOutcome(fenced_result("schedule", text), record)

    def _timeout(self, entry: Entry) -> float:
        """A call's time: the image tool's own (IMAGE_TIMEOUT_SECONDS) past which it gives up
        itself, else SKILLGATE_TOOL_CALL_TIMEOUT_SECONDS."""
        backend = entry.mounted.backend
        if isinstance(backend, ImageTool):
            return backend.timeout + 1
        return self.settings.tool_call_timeout_seconds


def _ms(started: float | None) -> int:
    return 0 if started is None else int((time.monotonic() - started) * 1000)


def _ended(
    record: ToolCallRecord, status: ToolStatus, detail: str, started: float | None = None
) -> ToolOutcome:
    """A call that produced no result: the model is told why, in one line."""
    ended = record.model_copy(
        update={"status": status, "detail": detail, "duration_ms": _ms(started)}
    )
    return ToolOutcome(f"error: {status}: {detail}", ended)
