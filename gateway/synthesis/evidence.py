"""Evidence for the synthesizer: finished sessions with their ratings and traces, in batches.

A session teaches something only when someone rated an answer or an answer
failed, and only when it holds at least one question and one answer; the rest
is consumed unread. Batches are bounded in sessions and in estimated tokens,
so the number of model calls grows with batches, not with sessions.

With the evidence window, a pass reads only *fresh* sessions (never shown to the model, or
rated since); an older one nothing came of is shown again only beside fresh ones it may
combine with: the most like them by their words (see `ranking`), in the first batch, at
most half of it, and at most `MAX_SHOWINGS` times in all. No fresh session, no batch.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from gateway.core.fence import TAG, fence
from gateway.core.records import SessionEvidence, Turn
from gateway.core.tokens import estimate_tokens
from gateway.review.cards import SessionEvidenceSource
from gateway.synthesis.ranking import lexical_scores

MAX_TURN_CHARS = 1200
MAX_COMMENT_CHARS = 500


def _clip(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def render_turn(turn: Turn) -> str:
    """One message, then its trace and ratings on indented lines."""
    if turn.role == "user":
        label = "".join(f", {a}" for a in turn.attachments)
        return f"[user{label}] {_clip(turn.text, MAX_TURN_CHARS)}"
    label = "[assistant, error placeholder shown]" if turn.kind == "error" else "[assistant]"
    lines = [f"{label} {_clip(turn.text, MAX_TURN_CHARS)}"]
    trace = []
    if turn.skills_loaded:
        trace.append("skills loaded: " + ", ".join(turn.skills_loaded))
    if turn.tools_used:
        trace.append("tools used: " + ", ".join(turn.tools_used))
    if turn.tool_statuses:
        trace.append("tool calls: " + ", ".join(turn.tool_statuses))
    if turn.failed:
        trace.append("FAILED" + (f": {_clip(turn.error, 200)}" if turn.error else ""))
    if trace:
        lines.append("  trace: " + "; ".join(trace))
    for r in turn.ratings:
        note = "👍" if r.rating > 0 else "👎"
        if r.comment:
            note += f' comment: "{_clip(r.comment, MAX_COMMENT_CHARS)}"'
        lines.append(f"  rating: {note}")
    return "\n".join(lines)


def render_session(evidence: SessionEvidence, budget_tokens: int, tag: str = TAG) -> str:
    """The session, fenced, within `budget_tokens`: unrated turns go first, oldest first."""
    rendered = [(t.notable, render_turn(t)) for t in evidence.turns]

    def text(parts: list[tuple[bool, str]], omitted: int) -> str:
        body = "\n".join(p for _, p in parts)
        if omitted:
            body = f"[{omitted} earlier message(s) omitted]\n{body}"
        return fence(body, tag, session=evidence.session_id, channel=evidence.channel)

    omitted = 0
    while len(rendered) > 1 and estimate_tokens(text(rendered, omitted)) > budget_tokens:
        drop = next((i for i, (notable, _) in enumerate(rendered) if not notable), 0)
        rendered.pop(drop)
        omitted += 1
    return text(rendered, omitted)


class EvidenceSource(SessionEvidenceSource, Protocol):
    """The part of the store that hands out finished, unconsumed sessions."""

    async def unconsumed_sessions(
        self, *, after_id: int, limit: int, since: float | None = None, fresh: bool = False
    ) -> list[int]: ...

    async def shown_sessions(self, *, since: float | None, below: int, limit: int) -> list[int]: ...


@dataclass
class Batch:
    """Sessions shown to the model in one call, and the signal-less ones consumed with them."""

    sessions: list[SessionEvidence] = field(default_factory=list)
    rendered: list[str] = field(default_factory=list)
    tag: str = TAG
    """The fence tag of this pass, which `rendered` uses and the system prompt names."""
    skipped: list[int] = field(default_factory=list)
    tokens: int = 0

    @property
    def shown_ids(self) -> list[int]:
        return [s.session_id for s in self.sessions]

    @property
    def consumed_ids(self) -> list[int]:
        return [*self.shown_ids, *self.skipped]


async def batches(
    source: EvidenceSource,
    *,
    max_sessions: int,
    max_tokens: int,
    tag: str = TAG,
    since: float | None = None,
    fresh: bool = False,
    beside: Sequence[SessionEvidence] = (),
) -> AsyncIterator[Batch]:
    """Batches over every unconsumed finished session, read a chunk at a time, fenced with `tag`.

    Sessions come in id order, each once per pass; with `since`, only those finished then
    or later (the evidence window); with `fresh`, only fresh ones. `beside` (older sessions
    chosen by `beside_fresh`) opens the first batch.
    """
    current = Batch(tag=tag)
    after = 0
    first = list(beside)
    while ids := await source.unconsumed_sessions(
        after_id=after, limit=max_sessions, since=since, fresh=fresh
    ):
        after = ids[-1]
        chunk, first = [*first, *await source.session_evidence(ids)], []
        for evidence in chunk:
            if not evidence.has_signal():
                current.skipped.append(evidence.session_id)
                continue
            text = render_session(evidence, max_tokens, tag)
            cost = estimate_tokens(text) + 1
            if current.sessions and (
                len(current.sessions) >= max_sessions or current.tokens + cost > max_tokens
            ):
                yield current
                current = Batch(tag=tag)
            current.sessions.append(evidence)
            current.rendered.append(text)
            current.tokens += cost
    if current.sessions or current.skipped:
        yield current


MAX_SHOWINGS = 3
"""Times an older session is shown to the model at most, when nothing came of it."""
OLD_POOL = 200
"""Older sessions considered per pass, newest first."""
LIKE = 0.2
"""How like a fresh session (TF-IDF cosine of letters) an older one must be to join it."""


async def beside_fresh(
    source: EvidenceSource, *, since: float | None, max_sessions: int, max_tokens: int
) -> list[SessionEvidence]:
    """Older sessions to show beside this pass's first fresh ones: those most like one of them."""
    fresh = await source.unconsumed_sessions(
        after_id=0, limit=max_sessions, since=since, fresh=True
    )
    if not fresh:
        return []
    older = await source.shown_sessions(since=since, below=MAX_SHOWINGS, limit=OLD_POOL)
    if not older:
        return []
    new = [e for e in await source.session_evidence(fresh) if e.has_signal()]
    old = [e for e in await source.session_evidence(older) if e.has_signal()]
    if not new or not old:
        return []
    olds = [gist(e) for e in old]
    per_fresh = [lexical_scores(gist(e), olds) for e in new]
    scores = [max(column) for column in zip(*per_fresh, strict=True)]
    chosen: list[SessionEvidence] = []
    tokens = 0
    for score, evidence in sorted(zip(scores, old, strict=True), key=lambda p: -p[0]):
        cost = estimate_tokens(render_session(evidence, max_tokens)) + 1
        if (
            score < LIKE
            or len(chosen) >= max(1, max_sessions // 2)
            or tokens + cost > max_tokens // 2
        ):
            break
        chosen.append(evidence)
        tokens += cost
    return chosen


def gist(evidence: SessionEvidence) -> str:
    """What a session is about: its questions and the comments on its answers."""
    parts = [t.text for t in evidence.turns if t.role == "user"]
    parts += [r.comment for t in evidence.turns for r in t.ratings if r.comment]
    return "\n".join(parts)
