"""Prometheus metrics: what the gateway counts (`gateway.admin.metrics` serves them).

Each app owns its registry (never the process-global one), so several apps in
one process keep separate counts. Counters are bumped where things happen;
feedback, proposals and the inbox backlog are read from the store at scrape time.
"""

from __future__ import annotations

from typing import Protocol

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import generate_latest

from gateway.core.model_health import ModelHealth

LATENCY_BUCKETS = (0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0)


class Totals(Protocol):
    """The stored totals a scrape reads (the store has them)."""

    async def feedback_counts(self) -> dict[int, int]: ...

    async def proposal_counts(self) -> dict[str, int]: ...

    async def inbox_pending_count(self) -> int: ...


class Metrics:
    """The gateway's collectors, in a registry of its own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.updates_received = Counter(
            "skillgate_updates_received",
            "Platform updates stored for answering (redeliveries not counted)",
            ["channel"],
            registry=r,
        )
        self.unreadable_updates = Counter(
            "skillgate_updates_unreadable",
            "Stored updates that could not be read at all, even from their raw JSON",
            ["channel"],
            registry=r,
        )
        self.answers = Counter(
            "skillgate_answers",
            "Answers delivered, by kind (normal, error, notice)",
            ["channel", "kind"],
            registry=r,
        )
        self.quota_refusals = Counter(
            "skillgate_quota_refusals",
            "Messages answered with a daily limit's notice instead of the model, by limit",
            ["channel", "limit"],
            registry=r,
        )
        self.answer_latency = Histogram(
            "skillgate_answer_latency_seconds",
            "Time from starting a turn to its answer being delivered",
            ["channel"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.model_errors = Counter(
            "skillgate_model_errors",
            "Turns whose answer the model failed to produce",
            ["channel"],
            registry=r,
        )
        self.tool_calls = Counter(
            "skillgate_tool_calls",
            "Tool calls, by tool and status (ok, error, timeout, refused, declined, unavailable)",
            ["tool", "status"],
            registry=r,
        )
        self.task_occurrences = Counter(
            "skillgate_task_occurrences",
            "Occurrences of scheduled tasks, by outcome (sent, late, missed, failed)",
            ["outcome"],
            registry=r,
        )
        self.feedback = Gauge(
            "skillgate_feedback", "Ratings stored, by rating (up, down)", ["rating"], registry=r
        )
        self.proposals = Gauge(
            "skillgate_proposals", "Skill proposals, by review status", ["status"], registry=r
        )
        self.inbox_pending = Gauge(
            "skillgate_inbox_pending", "Stored updates not processed yet", registry=r
        )
        self.model_calls = Counter(
            "skillgate_model_calls",
            "Chat calls to the model (answers and synthesis), by outcome (ok, failed)",
            ["outcome"],
            registry=r,
        )
        self.model_failing = Gauge(
            "skillgate_model_failing",
            "1 while the model's recent chat calls fail (SKILLGATE_ALERT_MODEL_FAILED_SHARE"
            " of the window's), else 0",
            registry=r,
        )
        self.health: ModelHealth | None = None
        """The chat calls' outcomes, read at scrape time (None: not watched)."""

    def watch_model(self, health: ModelHealth) -> None:
        """Count each chat call of `health` and show whether the model is failing."""
        self.health = health
        health.listeners.append(self.model_called)

    def model_called(self, error: str | None) -> None:
        self.model_calls.labels("ok" if error is None else "failed").inc()

    def received(self, channel: str) -> None:
        """Count one update stored for answering."""
        self.updates_received.labels(channel).inc()

    def unreadable(self, channel: str) -> None:
        """Count one update that could not be read."""
        self.unreadable_updates.labels(channel).inc()

    def answered(self, channel: str, kind: str, seconds: float, *, model_failed: bool) -> None:
        """Count one delivered answer."""
        self.answers.labels(channel, kind).inc()
        self.answer_latency.labels(channel).observe(seconds)
        if model_failed:
            self.model_errors.labels(channel).inc()

    def over_limit(self, channel: str, limit: str) -> None:
        """Count one message refused by a daily limit (user, chat or gateway)."""
        self.quota_refusals.labels(channel, limit).inc()

    def tool_called(self, tool: str, status: str) -> None:
        """Count one tool call that ended in `status`."""
        self.tool_calls.labels(tool, status).inc()

    def task_occurrence(self, outcome: str) -> None:
        """Count one occurrence of a scheduled task, recorded with `outcome`."""
        self.task_occurrences.labels(outcome).inc()

    async def refresh(self, store: Totals) -> None:
        """Read the stored totals that the gauges show."""
        ratings = await store.feedback_counts()
        self.feedback.labels("up").set(ratings.get(1, 0))
        self.feedback.labels("down").set(ratings.get(-1, 0))
        proposals = await store.proposal_counts()
        self.proposals.clear()
        for status, count in proposals.items():
            self.proposals.labels(status).set(count)
        self.inbox_pending.set(await store.inbox_pending_count())

    def refresh_model(self) -> None:
        """Whether the model fails now, as its chat calls say."""
        if self.health is not None:
            self.model_failing.set(1 if self.health.failing() is not None else 0)

    def render(self) -> bytes:
        """The registry in the Prometheus text format."""
        return generate_latest(self.registry)


METRICS: web.AppKey[Metrics] = web.AppKey("metrics")
