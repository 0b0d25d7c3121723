"""`skillgate synthesize`: one synthesis pass now, with progress per batch."""

from __future__ import annotations

import sys
import time

from gateway.config import Settings
from gateway.runtime.assembly import chat_cards, close_parts, open_parts
from gateway.synthesis.held import HELD_TRIES
from gateway.synthesis.synthesizer import BatchReport, RunSummary, iso_time


class _Progress:
    """One line as each batch starts (a small model may take minutes) and one as it ends."""

    def __init__(self, settings: Settings) -> None:
        self.model = settings.llm_model
        self.started = time.monotonic()

    def __call__(self, report: BatchReport) -> None:
        if not report.finished:
            self.started = time.monotonic()
            line = (
                f"batch {report.index}: asking {self.model} about {report.sessions} session(s) ..."
            )
        else:
            line = (
                f"batch {report.index}: {report.sessions} session(s) -> {report.proposed}"
                f" proposed, {report.suppressed} suppressed, {report.refused} refused"
                f" in {time.monotonic() - self.started:.1f} s"
            )
        print(line, file=sys.stderr, flush=True)


def print_summary(summary: RunSummary) -> None:
    """The proposals made, then what was suppressed or refused, then one result line."""
    for p in summary.proposed:
        what = {"update": f"update of {p.target}", "retire": f"retirement of {p.target}"}.get(
            p.kind, "new skill"
        )
        state = "applied" if p.status == "applied" else "waiting for review"
        print(f"proposed #{p.id} {p.name} ({what}, {state}): {p.description}")
    for d in summary.suppressed:
        print(f"suppressed {d.name}: {d.reason}")
    for d in summary.refused:
        print(f"refused {d.name}: {d.reason}")
    counts = (
        f"{len(summary.proposed)} proposed, {len(summary.suppressed)} suppressed,"
        f" {len(summary.refused)} refused from {summary.sessions} session(s)"
        f" in {summary.batches} batch(es)"
    )
    for h in summary.held:
        if h.waits_for is not None:
            print(f"waits {h.name}: {h.reason}")
            continue
        print(
            f"held {h.name}: {h.reason} (asked {h.tries} of {HELD_TRIES} times;"
            f" next try {iso_time(h.next_at)})"
        )
    if summary.judge is not None:
        print(f"judge: {summary.judge}")
    if summary.stopped is not None:
        print(f"stopped: {summary.stopped}")
    if summary.status == "ok":
        print(f"run {summary.run_id} ok: {counts}")
    else:
        print(f"run {summary.run_id or '-'} {summary.status}: {summary.error}", file=sys.stderr)


def open_sessions_note(count: int, idle_minutes: float) -> str:
    """Why sessions still being talked in were not read, and when they will be."""
    return (
        f"{count} session(s) still open, not read: a session is read once it is finished,"
        f" by /new in the chat or after {idle_minutes:g} idle minute(s)"
        " (SKILLGATE_SESSION_IDLE_MINUTES)"
    )


async def run_synthesize(settings: Settings) -> int:
    """Exit status 0 when the pass finished; 1 when it failed, another pass was running, or
    there is no model to ask."""
    if not settings.model_configured:
        print(
            "skillgate synthesize: no model configured: run `skillgate init`"
            " (or set LLM_BASE_URL and LLM_MODEL)",
            file=sys.stderr,
        )
        return 1
    parts = await open_parts(settings)
    try:
        async with chat_cards(parts):  # new proposals reach the admins' chats now
            summary = await parts.synthesizer.run("cli", progress=_Progress(settings))
        still_open = await parts.store.open_session_count()
    finally:
        await close_parts(parts)
    print_summary(summary)
    if still_open:
        print(open_sessions_note(still_open, settings.session_idle_minutes))
    return 0 if summary.status == "ok" else 1
