"""One table says how every surface answers a review error."""

from __future__ import annotations

import pytest

from gateway.errors import (
    InvalidSkill,
    ProposalNotFound,
    ReopenRefused,
    RollbackRefused,
    StoreBusy,
    StoreError,
)
from gateway.review.answers import REVIEW_ERRORS, Refusal, not_applied_because, refusal


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (ProposalNotFound("no proposal #9"), Refusal(404, "gone")),
        (ReopenRefused("not rejected"), Refusal(409, "refused")),
        (RollbackRefused("changed since"), Refusal(409, "refused")),
        (InvalidSkill("bad front matter"), Refusal(503, "not_applied")),
        (StoreBusy("locked"), Refusal(503, "not_applied")),
        (PermissionError("read-only"), Refusal(503, "not_applied")),
    ],
)
def test_an_error_is_answered_as_its_nearest_class_in_the_table(
    error: Exception, expected: Refusal
) -> None:
    assert isinstance(error, REVIEW_ERRORS)
    assert refusal(error) == expected


def test_an_error_outside_the_table_has_no_answer() -> None:
    with pytest.raises(LookupError):
        refusal(ValueError("not a review error"))


def test_what_was_not_applied_says_which_part_failed() -> None:
    assert not_applied_because(StoreError("disk full")) == "the database could not be written"
    assert not_applied_because(OSError("disk full")) == "the skill files could not be changed"
