"""Is a model able to judge? Tried on pairs whose answers are known before it is trusted.

A judging question (the same-claim question, a trial's verdict) is a yes-or-no question a
model answers about one item. `calibrate` puts every item of a calibration set to the model
and compares its answers with the known ones: a model that gets fewer than `BAR` right, or
gives one answer to `LEAN` of the questions or more, is *unable to judge*, and what it says
decides nothing (see `sameness`: the candidate goes to a person instead). A model that
could not be asked at all is `Unreachable`: nothing is recorded and it is tried again later.

The result is kept per model and question kind in the store, with a hash of the set it was
tried on, so a changed model or a changed set is tried again, and the same one is not.
A model the operator declared trusted (SKILLGATE_TRUSTED_JUDGES) is not tried: its result
says `declared`, never calibrated. The on-board model (LLM_LOCAL_MODEL: SmolLM2-135M on
llama.cpp, for trying the gateway) is tried like any other, so its figures are real, and
marked `onboard`: unable to judge whatever it scored on 16 pairs (docs/LEARNING.md has
its measured calibration); the fix is a real model, not another judge name.

The built-in set (`data/calibration_pairs.json`) holds pairs in English, Japanese,
Traditional Chinese and Thai, half the same claim and half a different claim on a nearby
topic; the operator's own pairs (`calibration_pairs.json` in the data dir, the same
format) are added to it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import Generic, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gateway.core.llm import LLM
from gateway.errors import ConfigError
from gateway.i18n import N_

log = logging.getLogger(__name__)

BAR = 0.85
"""The share of right answers a judge needs."""
LEAN = 0.90
"""A judge giving one answer to this share of the questions or more only leans one way."""
PAIRS_FILE = "calibration_pairs.json"
"""The operator's own pairs, in the data dir."""
MIN_PAIRS = 16

UNABLE_NOTICE = N_(
    "⚠️ The model {model} cannot judge whether a new skill repeats a known one ({right} right"
    " on the calibration set). Until LLM_SAME_CLAIM_MODEL names a model that can, each such"
    ' proposal comes to you marked "possibly the same": decide yourself.'
)

ONBOARD_NOTICE = N_(
    "⚠️ The model {model} is the on-board model, for trying the gateway: it cannot judge"
    " whether a new skill repeats a known one ({right} right on the calibration set), and its"
    ' skills are rarely useful. Each such proposal comes to you marked "possibly the same":'
    " decide yourself. For a real model, unset LLM_LOCAL_MODEL and set LLM_BASE_URL and"
    " LLM_MODEL."
)

Verdict = Literal["able", "unable", "declared"]


class Text(BaseModel):
    """One instruction of a pair, as a skill states it."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=64)
    description: str = Field(min_length=1, max_length=1024)
    body: str = Field(min_length=1, max_length=4000)


class Pair(BaseModel):
    """A known instruction and a new one, and whether the new one states the same claim."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=64)
    lang: str = Field(min_length=2, max_length=16)
    same: bool
    known: Text
    new: Text


class PairsFile(BaseModel):
    """The file's shape: an optional note, then the pairs."""

    model_config = ConfigDict(extra="forbid")

    about: str = ""
    pairs: list[Pair] = Field(min_length=1)


class Calibration(BaseModel):
    """How one model did on one kind of question, and when."""

    model: str
    kind: str
    total: int
    correct: int
    yes: int
    """Questions answered "yes" (for the same-claim question: the same claim)."""
    unanswered: int
    """Questions with no usable answer (cut, not the contract): counted as wrong."""
    pairs_hash: str
    at: float
    declared: bool = False
    """Declared trusted by the operator (SKILLGATE_TRUSTED_JUDGES): not tried at all."""
    onboard: bool = False
    """The on-board model (LLM_LOCAL_MODEL): tried, and unable to judge whatever it scored."""

    @property
    def score(self) -> float:
        return self.correct / self.total if self.total else 0.0

    @property
    def lean(self) -> float:
        """The share of the questions given the answer it gave most (unanswered count for none)."""
        if not self.total:
            return 1.0
        return max(self.yes, self.total - self.yes - self.unanswered) / self.total

    @property
    def verdict(self) -> Verdict:
        if self.declared:
            return "declared"
        if self.onboard:
            return "unable"
        return "able" if self.score >= BAR and self.lean < LEAN else "unable"

    def summary(self) -> str:
        """E.g. `unable to judge: 8 of 16 right (50 %), "yes" to 16 of 16`."""
        if self.declared:
            return "declared trusted (SKILLGATE_TRUSTED_JUDGES), not calibrated"
        word = "able to judge" if self.verdict == "able" else "unable to judge"
        cut = f", {self.unanswered} without a usable answer" if self.unanswered else ""
        scored = (
            f"{self.correct} of {self.total} right ({self.score:.0%}),"
            f' "yes" to {self.yes} of {self.total}{cut}'
        )
        if self.onboard:
            return f"{word}: the on-board model (LLM_LOCAL_MODEL), for trying only ({scored})"
        return f"{word}: {scored} (needs {BAR:.0%} right and under {LEAN:.0%} one way)"


class Unreachable(Exception):
    """The model could not be asked at all (down, refused): nothing can be said of it."""


class NoAnswer(Exception):
    """The model was asked but gave no usable answer (cut, not the contract)."""


Item = TypeVar("Item", contravariant=True)


class Question(Protocol[Item]):
    """A kind of yes-or-no question a model is asked to judge, with its calibration items."""

    @property
    def kind(self) -> str:
        """Its name in the store and on the pages: `same-claim`, `trial`."""
        ...

    def expected(self, item: Item) -> bool:
        """The right answer about `item`."""
        ...

    async def answer(self, llm: LLM, item: Item) -> bool:
        """The model's answer; NoAnswer when it gave none usable, Unreachable when not asked."""
        ...


async def calibrate(
    llm: LLM, question: Question[Item], items: Sequence[Item], *, pairs_hash: str, at: float
) -> Calibration:
    """Put every item to `llm` and count its right answers; Unreachable when it cannot be asked."""
    correct = yes = unanswered = 0
    for item in items:
        try:
            said = await question.answer(llm, item)
        except NoAnswer:
            unanswered += 1
            continue
        yes += said
        correct += said == question.expected(item)
    return Calibration(
        model=llm.model or "",
        kind=question.kind,
        total=len(items),
        correct=correct,
        yes=yes,
        unanswered=unanswered,
        pairs_hash=pairs_hash,
        at=at,
    )


def builtin_pairs() -> list[Pair]:
    """The calibration set shipped with the gateway."""
    text = resources.files("gateway.synthesis").joinpath("data", PAIRS_FILE).read_text("utf-8")
    return PairsFile.model_validate_json(text).pairs


def read_pairs(path: Path) -> list[Pair]:
    """The operator's pairs in `path` (none when there is no file); ConfigError when unreadable."""
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} cannot be read: {exc}") from exc
    try:
        return PairsFile.model_validate_json(text).pairs
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the file"
        raise ConfigError(
            f"{path} is not a calibration set ({where}: {first['msg']}); see docs/LEARNING.md"
        ) from None


def pairs_hash(pairs: Sequence[BaseModel]) -> str:
    """Which set a result was measured on: a changed set is tried again."""
    raw = json.dumps([p.model_dump() for p in pairs], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


class Calibrations(Protocol):
    """Where calibration results are kept, per model and question kind."""

    async def calibration(self, model: str, kind: str) -> Calibration | None: ...

    async def record_calibration(self, result: Calibration) -> None: ...


Model = TypeVar("Model", bound=BaseModel)


class Calibrator(Generic[Model]):
    """Calibrates each judging model once per set, keeps the result, and answers from it.

    One calibrator per kind of question and its set: the same-claim question on `Pair`s,
    the trial's comparison on its own pairs (see `comparison`).
    """

    def __init__(
        self,
        store: Calibrations,
        pairs: Sequence[Model],
        *,
        trusted: Sequence[str] = (),
        clock: Callable[[], float],
        told: Callable[[Calibration], Awaitable[None]] | None = None,
        onboard: bool = False,
    ) -> None:
        self.store = store
        self.pairs = list(pairs)
        self.hash = pairs_hash(self.pairs)
        self.trusted = frozenset(trusted)
        self.clock = clock
        self.told = told
        """Called with every result found unable (the admins' notice, sent once)."""
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}
        self.onboard = onboard
        """Every judge is the on-board model (LLM_LOCAL_MODEL: all calls go to it)."""

    async def result(
        self, llm: LLM, question: Question[Model], *, again: bool = False
    ) -> Calibration:
        """The model's result, calibrating it first when it has none for this set (or `again`).

        Unreachable when it has to be tried and cannot be asked.
        """
        model = llm.model or ""
        if model in self.trusted:
            return Calibration(
                model=model,
                kind=question.kind,
                total=0,
                correct=0,
                yes=0,
                unanswered=0,
                pairs_hash=self.hash,
                at=self.clock(),
                declared=True,
            )
        lock = self._locks.setdefault((model, question.kind), asyncio.Lock())
        async with lock:  # the start-up calibration and a pass never try one model twice
            known = None if again else await self.store.calibration(model, question.kind)
            if known is None or known.pairs_hash != self.hash:
                log.info(
                    "calibrating %s on the %s question (%d pairs)",
                    model,
                    question.kind,
                    len(self.pairs),
                )
                known = await calibrate(
                    llm, question, self.pairs, pairs_hash=self.hash, at=self.clock()
                )
                known.onboard = self.onboard
                await self.store.record_calibration(known)
                level = logging.INFO if known.verdict == "able" else logging.WARNING
                log.log(
                    level, "judge %s on the %s question: %s", model, question.kind, known.summary()
                )
            elif self.onboard and not known.onboard:  # the same name served elsewhere before
                known = known.model_copy(update={"onboard": True})
                await self.store.record_calibration(known)
        if known.verdict == "unable" and self.told is not None:
            await self.told(known)
        return known


def load_pairs(data_dir: Path) -> list[Pair]:
    """The built-in set and the operator's own pairs; ConfigError when theirs is unreadable."""
    return [*builtin_pairs(), *read_pairs(data_dir / PAIRS_FILE)]


FIX = (
    "set LLM_SAME_CLAIM_MODEL to a model able to judge (or declare this one trusted with"
    " SKILLGATE_TRUSTED_JUDGES); meanwhile each candidate that needs a judgement goes to a"
    " person marked as possibly a repeat"
)


ONBOARD_FIX = (
    "the on-board model is for trying the gateway: for skills, synthesis and judging, unset"
    " LLM_LOCAL_MODEL and set LLM_BASE_URL and LLM_MODEL to a real model's endpoint (docs/"
    "SETUP.md); meanwhile synthesis still runs and each candidate that needs a judgement goes"
    " to a person marked as possibly a repeat"
)


def fix_for(result: Calibration) -> str:
    """What to do about an unable judge: a judge model of its own, or a real model at all."""
    return ONBOARD_FIX if result.onboard else FIX


def judge_line(result: Calibration, *, fix: bool = True) -> str:
    """The judge's standing in one line, with the fix when it is unable (and `fix`)."""
    line = f"{result.model} on the {result.kind} question: {result.summary()}"
    return f"{line}; {fix_for(result)}" if fix and result.verdict == "unable" else line
