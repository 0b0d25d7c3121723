"""Whether the model answers, judged by the chat calls themselves, not only by `/models`.

A server whose `/models` answers while every chat completion fails (a dead engine behind a
live API server, an exhausted quota) looks healthy to a ping. `ModelHealth` counts the
outcome of each chat call: once at least `min_calls` calls in the last `window` seconds
were made and `share` of them or more failed, the model is failing since the first of
those failures, until the calls succeed again. `WatchedLLM` records every call of the
model it wraps. Only the failures of the model itself count: a prompt too long, or a
refused tool or JSON mode, is the request's, and the caller handles it.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from gateway.core.llm import LLM, Completion, WrappedLLM
from gateway.errors import (
    ContextOverflow,
    JsonModeUnsupported,
    ModelError,
    ModelNotConfigured,
    ToolsUnsupported,
    VisionUnsupported,
)

REQUEST_ERRORS = (
    ContextOverflow,
    JsonModeUnsupported,
    ModelNotConfigured,
    ToolsUnsupported,
    VisionUnsupported,
)
"""The request's own faults: another try without the refused part answers."""


def is_outage(exc: ModelError) -> bool:
    """True for a failure of the model itself (5xx, refused connection, quota, timeout)."""
    return not isinstance(exc, REQUEST_ERRORS)


@dataclass(frozen=True)
class Failing:
    """The model fails its chat calls: since when, and the last error."""

    since: float
    error: str
    failed: int
    calls: int


class ModelHealth:
    """The outcome of recent chat calls, and whether they add up to an outage."""

    def __init__(
        self,
        *,
        window_seconds: float = 300.0,
        min_calls: int = 3,
        share: float = 0.5,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.window, self.min_calls, self.share = window_seconds, min_calls, share
        self.clock = clock
        self._recent: deque[tuple[float, str | None]] = deque()
        self._failed: deque[tuple[float, str]] = deque()
        """The failures among `_recent`, kept apart so that judging costs no scan of the
        window (at hundreds of answers a second it holds tens of thousands of calls)."""
        self._failing: Failing | None = None
        self.calls = 0
        self.failures = 0
        self.last_error: str | None = None
        self.last_ok: float | None = None
        self.listeners: list[Callable[[str | None], None]] = []
        """Told each outcome (the metrics count them)."""

    def record(self, error: str | None) -> None:
        """One chat call's outcome: None when it answered, else why it failed."""
        now = self.clock()
        self.calls += 1
        self._recent.append((now, error))
        if error is None:
            self.last_ok = now
        else:
            self.failures += 1
            self.last_error = error
            self._failed.append((now, error))
        self._judge(now)
        for listener in self.listeners:
            listener(error)

    @property
    def known(self) -> bool:
        """Whether any chat call was made since the start (else the calls say nothing)."""
        return self.calls > 0

    def failing(self) -> Failing | None:
        """The outage, if the recent calls add up to one."""
        self._judge(self.clock())
        return self._failing

    def _judge(self, now: float) -> None:
        while self._recent and self._recent[0][0] < now - self.window:
            self._recent.popleft()
        failed = self._failed
        while failed and failed[0][0] < now - self.window:
            failed.popleft()
        calls = len(self._recent)
        if calls >= self.min_calls and len(failed) >= self.share * calls:
            since = self._failing.since if self._failing else failed[0][0]
            self._failing = Failing(since, failed[-1][1] or "-", len(failed), calls)
        elif calls >= self.min_calls or (self._recent and self._recent[-1][1] is None):
            self._failing = None  # enough calls answered, or the latest one did
        # Too few calls to judge, the last of them failed: an outage stays one.


class WatchedLLM(WrappedLLM):
    """A model whose every chat call is recorded in a `ModelHealth`."""

    def __init__(self, llm: LLM, health: ModelHealth) -> None:
        super().__init__(llm)
        self.health = health

    async def around(self, answer: Awaitable[Completion]) -> Completion:
        try:
            completion = await answer
        except ModelError as exc:
            if is_outage(exc):
                self.health.record(str(exc))
            raise
        self.health.record(None)
        return completion
