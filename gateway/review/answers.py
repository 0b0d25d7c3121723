"""What every review surface (console, admin API, CLI, chat) shares.

The longest reason a decision keeps, and one table of how a review error is answered:
each surface renders the answer its own way (a page, a JSON error, a line on stderr, a
chat message) but they all agree on what kind of answer it is and on its HTTP status.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gateway.errors import (
    ProposalNotFound,
    ReopenRefused,
    RollbackRefused,
    SkillError,
    StoreError,
)

MAX_REASON = 2000
"""The longest reason a decision, rollback, reopening or switch keeps, in characters."""

Answer = Literal["gone", "refused", "not_applied"]
"""gone: no such proposal; refused: the operation does not apply to it now (the error
says why); not_applied: the files or the database failed, and nothing changed."""


@dataclass(frozen=True)
class Refusal:
    """How a surface answers one kind of review error."""

    status: int
    """The HTTP status the console and the admin API answer with."""
    answer: Answer


REFUSALS: dict[type[Exception], Refusal] = {
    ProposalNotFound: Refusal(404, "gone"),
    ReopenRefused: Refusal(409, "refused"),
    RollbackRefused: Refusal(409, "refused"),
    SkillError: Refusal(503, "not_applied"),
    StoreError: Refusal(503, "not_applied"),
    OSError: Refusal(503, "not_applied"),
}
"""Each error a review operation (approve, reject, reopen, roll back) answers for."""

REVIEW_ERRORS: tuple[type[Exception], ...] = tuple(REFUSALS)
"""What a surface catches around a review operation; `refusal` says how to answer."""


def refusal(exc: Exception) -> Refusal:
    """The table's answer to `exc`: its own class's, else its nearest base class's."""
    for kind in type(exc).__mro__:
        found = REFUSALS.get(kind)
        if found is not None:
            return found
    raise LookupError(f"{type(exc).__name__} is not a review error")


def not_applied_because(exc: Exception) -> str:
    """Why a "not_applied" error left things as they were, for the admin to act on."""
    if isinstance(exc, StoreError):
        return "the database could not be written"
    return "the skill files could not be changed"
