"""Is a proposal a claim already made? Compared with rejections, pending proposals and live skills.

Three measures, cheapest first, each saying why:

1. the same text (body hash), or under the same name a like description (difflib); for two
   updates of one skill the lines they change must match instead;
2. word likeness: cosine of stemmed content words of name, description and body, at
   `threshold` or above; with an embedding model (`LLM_EMBEDDING_MODEL`), the cosine of
   the two texts' embeddings at `embedding_threshold` or above, which survives rewording;
3. a close call (either score within `ask_margin` below its threshold) is put to the chat
   model as one short question, "is B the same instruction as A?"; only its "yes" suppresses.

A failing embedding or adjudication call never fails the pass: that measure is skipped
and said so in the log, and the proposal goes to a person, who can reject it again.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from gateway.core.embeddings import Embedder
from gateway.core.embeddings import cosine as vector_cosine
from gateway.core.llm import LLM
from gateway.errors import ModelError
from gateway.review.proposals import Claim
from gateway.synthesis.similarity import (
    claim_key,
    claim_text,
    content_words,
    cosine,
    normalise,
    similar,
)

log = logging.getLogger(__name__)
MAX_ASKS = 2
"""Close calls put to the model per proposal, the closest first."""
Against = Literal["rejected", "pending", "live"]
ASK_SYSTEM = (
    "You compare two instructions for a chat assistant. Answer with JSON only:"
    ' {"same": true or false, "why": "one short sentence"}. "same" is true only when B'
    " asks the assistant to do what A asks, perhaps in other words or under another name;"
    " a different request on the same topic is not the same."
)


@dataclass(frozen=True)
class Known:
    """Something a proposal may repeat: a rejection, a pending proposal or a live skill."""

    against: Against
    claim: Claim
    proposal_id: int | None = None
    skill: str | None = None
    reason: str | None = None


@dataclass(frozen=True)
class Likeness:
    """Why a proposal counts as the same claim as `known`."""

    known: Known
    detail: str


@dataclass
class _Scored:
    known: Known
    words: float
    vector: float | None = None
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class SameClaimConfig:
    """Thresholds: word likeness, embedding likeness, and the band of close calls."""

    threshold: float = 0.85
    embedding_threshold: float = 0.9
    ask_margin: float = 0.25
    """0 puts no close call to the model."""


class SameClaim:
    """Finds the known claim a candidate repeats, with the reason in words."""

    def __init__(
        self,
        config: SameClaimConfig,
        *,
        embedder: Embedder | None = None,
        adjudicator: LLM | None = None,
    ) -> None:
        self.config = config
        self.embedder = embedder
        self.adjudicator = adjudicator

    async def find(self, claim: Claim, known: Sequence[Known]) -> Likeness | None:
        """The first known claim `claim` repeats, or None."""
        cfg = self.config
        scored: list[_Scored] = []
        for k in known:
            plain = _plain(claim, k, cfg.threshold)
            if plain is not None:
                return Likeness(k, plain)
            if _separate_updates(claim, k.claim):
                continue  # different skills' updates: each has its own change
            scored.append(_Scored(k, _words(claim, k.claim)))
        if not scored:
            return None
        await self._vectors(claim, scored)
        for s in sorted(scored, key=lambda s: -max(s.words, s.vector or 0.0)):
            if s.words >= cfg.threshold:
                return Likeness(s.known, f"word likeness {s.words:.2f}")
            if s.vector is not None and s.vector >= cfg.embedding_threshold:
                return Likeness(
                    s.known, f"embedding likeness {s.vector:.2f} (word likeness {s.words:.2f})"
                )
        return await self._ask(claim, scored)

    async def _vectors(self, claim: Claim, scored: list[_Scored]) -> None:
        if self.embedder is None:
            return
        texts = [claim_text(claim), *(claim_text(s.known.claim) for s in scored)]
        try:
            vectors = await self.embedder.embed(texts)
        except ModelError as exc:
            log.warning("embeddings unavailable, comparing words only: %s", exc)
            return
        for s, v in zip(scored, vectors[1:], strict=True):
            s.vector = vector_cosine(vectors[0], v)

    def _close(self, s: _Scored) -> bool:
        cfg = self.config
        if cfg.ask_margin <= 0:
            return False
        near_words = s.words >= cfg.threshold - cfg.ask_margin
        near_vector = s.vector is not None and s.vector >= cfg.embedding_threshold - cfg.ask_margin
        return near_words or near_vector

    async def _ask(self, claim: Claim, scored: list[_Scored]) -> Likeness | None:
        if self.adjudicator is None:
            return None
        close = [s for s in scored if self._close(s)]
        close.sort(key=lambda s: -max(s.words, s.vector or 0.0))
        for s in close[:MAX_ASKS]:
            verdict = await self._adjudicate(s.known.claim, claim)
            if verdict is None:
                continue
            same, why = verdict
            scores = f"word likeness {s.words:.2f}" + (
                f", embedding likeness {s.vector:.2f}" if s.vector is not None else ""
            )
            if same:
                detail = f"the model judged it the same instruction ({scores}): {why}"
                return Likeness(s.known, detail)
            log.info("close call with %s judged different (%s): %s", _label(s.known), scores, why)
        return None

    async def _adjudicate(self, a: Claim, b: Claim) -> tuple[bool, str] | None:
        """The model's verdict on whether `b` repeats `a`, or None when it gave none."""
        assert self.adjudicator is not None
        question = (
            f"A:\n{claim_text(a)[:1500]}\n\nB:\n{claim_text(b)[:1500]}\n\n"
            "Is B the same instruction as A?"
        )
        messages = [
            {"role": "system", "content": ASK_SYSTEM},
            {"role": "user", "content": question},
        ]
        try:
            completion = await self.adjudicator.complete(messages, json_mode=True, max_tokens=120)
            data = json.loads(_json_object(completion.text or ""))
        except (ModelError, json.JSONDecodeError) as exc:
            log.warning("could not ask the model about a close call: %s", exc)
            return None
        if not isinstance(data, dict) or not isinstance(data.get("same"), bool):
            log.warning("the model's answer about a close call has no true/false 'same'")
            return None
        return data["same"], " ".join(str(data.get("why") or "").split())[:200] or "no reason given"


def _json_object(text: str) -> str:
    start, end = text.find("{"), text.rfind("}")
    return text[start : end + 1] if 0 <= start < end else text


def _label(k: Known) -> str:
    if k.proposal_id is not None:
        return f"{k.against} proposal #{k.proposal_id}"
    return f"live skill {k.skill}"


def _separate_updates(a: Claim, b: Claim) -> bool:
    both = a.kind == "update" and b.kind == "update"
    return both and (a.target or a.name) != (b.target or b.name)


def _plain(a: Claim, k: Known, threshold: float) -> str | None:
    """The same text, or (the earlier rule) the same target, name and description."""
    b = k.claim
    if a.content_hash == b.content_hash:
        return "the same text"
    if a.kind == "update" and b.kind == "update":
        if (a.target or a.name) != (b.target or b.name):
            return None
        if similar(a.change_text, b.change_text, threshold):
            return "the same change to the same skill"
        return None
    # Only under the same name: descriptions written from one template are alike whatever
    # they describe, so for two names the content measures decide.
    if normalise(a.target or a.name) == normalise(b.target or b.name) and similar(
        claim_key(a), claim_key(b), threshold
    ):
        return "the same name and description"
    return None


def _words(a: Claim, b: Claim) -> float:
    if a.kind == "update" and b.kind == "update":
        # Two updates of one skill share its text: only what each changes can tell them apart.
        return cosine(content_words(a.change_text), content_words(b.change_text))
    return cosine(content_words(claim_text(a)), content_words(claim_text(b)))
