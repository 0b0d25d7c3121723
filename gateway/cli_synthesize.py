"""`skillgate synthesize`: one synthesis pass now, with progress per batch."""

from __future__ import annotations

import sys

from gateway.app import chat_cards, close_parts, open_parts
from gateway.config import Settings
from gateway.skills.synthesizer import BatchReport, RunSummary


def _progress(report: BatchReport) -> None:
    print(
        f"batch {report.index}: {report.sessions} session(s) -> {report.proposed} proposed,"
        f" {report.suppressed} suppressed, {report.refused} refused",
        file=sys.stderr,
        flush=True,
    )


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
    if summary.status == "ok":
        print(f"run {summary.run_id} ok: {counts}")
    else:
        print(f"run {summary.run_id or '-'} {summary.status}: {summary.error}", file=sys.stderr)


async def run_synthesize(settings: Settings) -> int:
    """Exit status 0 when the pass finished, 1 when it failed or another pass was running."""
    parts = await open_parts(settings)
    try:
        async with chat_cards(parts):  # new proposals reach the admins' chats now
            summary = await parts.synthesizer.run("cli", progress=_progress)
    finally:
        await close_parts(parts)
    print_summary(summary)
    return 0 if summary.status == "ok" else 1
