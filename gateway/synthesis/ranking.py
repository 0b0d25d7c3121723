"""Which known claims a candidate is compared with: the few most like it, by meaning or letters.

With an embedding model the cosine of the two texts' vectors ranks; without one (or when
the endpoint fails), a lexical score that needs no word boundaries: character n-grams of
the normalised text, weighted by how rare each is among the texts compared (TF-IDF), so
Thai, Japanese and Chinese rank as well as English and what every text shares ("the",
"ます", "ครับ") counts for little. Shared digits, units and slug words still link a text
to its translation, and so does each claim's statement: the synthesis model writes it in
English whatever the skill's language (a claim without one, such as an imported skill, is
stated by its description). The ranking only chooses what the model is shown; the model
decides.
"""

from __future__ import annotations

import logging
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from gateway.core.embeddings import Embedder
from gateway.core.embeddings import cosine as vector_cosine
from gateway.errors import ModelError
from gateway.review.proposals import Claim
from gateway.synthesis.similarity import claim_text

log = logging.getLogger(__name__)
_NOT_WORD = re.compile(r"[\W_]+", re.UNICODE)
# Scripts written without spaces between words: their n-grams are taken from each run.
_UNSPACED = re.compile(r"[\u0e00-\u0eff\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff\uac00-\ud7af]+")


Against = Literal["rejected", "pending", "live"]


@dataclass(frozen=True)
class Known:
    """Something a proposal may repeat: a rejection, a pending proposal or a live skill."""

    against: Against
    claim: Claim
    proposal_id: int | None = None
    skill: str | None = None
    reason: str | None = None

    def label(self) -> str:
        """How the run record names it: `rejected #4 verify-identity`, `live brief-answers`."""
        ref = f" #{self.proposal_id}" if self.proposal_id is not None else ""
        return f"{self.against}{ref} {self.skill or self.claim.target or self.claim.name}"


@dataclass(frozen=True)
class Ranked:
    """A known claim and how like the candidate it is (0-1), by the named measure."""

    known: Known
    score: float
    measure: str


def ranking_text(claim: Claim) -> str:
    """What is ranked: the name's words, the statement, the description and the lines added."""
    stated = [claim.statement] if claim.statement else []
    return "\n".join([_name(claim), *stated, claim_text(claim)])


def _name(claim: Claim) -> str:
    return (claim.target or claim.name).replace("-", " ")


@lru_cache(maxsize=4096)
def grams(text: str) -> Counter[str]:
    """Character 3-grams of each word, and 2-grams of runs in scripts without spaces.

    Cached (a pass ranks the same known claims for every candidate): never change the result.
    """
    text = _NOT_WORD.sub(" ", unicodedata.normalize("NFKC", text).lower())
    out: Counter[str] = Counter()
    for word in text.split():
        padded = f" {word} "
        out.update(padded[i : i + 3] for i in range(len(padded) - 2))
        for run in _UNSPACED.findall(word):
            out.update(run[i : i + 2] for i in range(len(run) - 1))
    return out


def lexical_scores(candidate: str, others: Sequence[str]) -> list[float]:
    """TF-IDF cosine of `candidate` with each of `others`, the pool itself giving the weights."""
    docs = [grams(candidate), *(grams(t) for t in others)]
    df: Counter[str] = Counter()
    for d in docs:
        df.update(d.keys())
    n = len(docs)
    idf = {g: math.log((n + 1) / (c + 1)) + 1.0 for g, c in df.items()}
    vectors = [{g: (1 + math.log(c)) * idf[g] for g, c in d.items()} for d in docs]
    first = vectors[0]
    norm0 = math.sqrt(sum(v * v for v in first.values()))
    scores = []
    for v in vectors[1:]:
        norm = norm0 * math.sqrt(sum(x * x for x in v.values()))
        dot = sum(w * v[g] for g, w in first.items() if g in v)
        scores.append(dot / norm if norm else 0.0)
    return scores


async def rank(
    claim: Claim, known: Sequence[Known], limit: int, embedder: Embedder | None = None
) -> list[Ranked]:
    """The `limit` known claims most like `claim`, most like first."""
    if not known or limit <= 0:
        return []
    texts = [ranking_text(k.claim) for k in known]
    measure, scores = "embedding", await _embedded(ranking_text(claim), texts, embedder)
    if scores is None:
        # A slug is written in Latin letters whatever the language of the text, so a
        # translation is often still near its original by name when not by text.
        names = lexical_scores(_name(claim), [_name(k.claim) for k in known])
        text = lexical_scores(ranking_text(claim), texts)
        # Statements are English whatever the skill's language: a translation meets its
        # original there when its letters share nothing with it.
        said = lexical_scores(claim.said, [k.claim.said for k in known])
        measure, scores = "letters", [max(t) for t in zip(text, names, said, strict=True)]
    order = sorted(range(len(known)), key=lambda i: -scores[i])
    return [Ranked(known[i], scores[i], measure) for i in order[:limit]]


async def _embedded(text: str, others: list[str], embedder: Embedder | None) -> list[float] | None:
    if embedder is None:
        return None
    try:
        vectors = await embedder.embed([text, *others])
    except ModelError as exc:
        log.warning("embeddings unavailable, ranking by letters: %s", exc)
        return None
    return [vector_cosine(vectors[0], v) for v in vectors[1:]]
