"""Card content and rendering: evidence, outcomes, trimming to the limits, signed button data."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gateway.channels.line.cards import CardBubbles
from gateway.channels.telegram.cards import card_part
from gateway.channels.text import utf16_len
from gateway.config import Settings
from gateway.core.records import Rating, SessionEvidence, Turn
from gateway.review.buttons import CardSigner
from gateway.review.cards import Card, Evidence, evidence_of, fit
from gateway.review.proposals import Proposal
from tests.cards_support import postbacks
from tests.fakes.telegram_api import html_to_plain


def make_proposal(**fields: Any) -> Proposal:
    values: dict[str, Any] = {
        "id": 7,
        "kind": "update",
        "target": "writing-for-chat",
        "name": "writing-for-chat",
        "description": "How to write answers for a chat window.",
        "content": "# Writing\n\nShort answers.",
        "content_hash": "h",
        "rationale": "Users asked for shorter answers <b>twice</b> & more.",
        "based_on": [1, 2, 3],
        "generated_at": 1_700_000_000.0,
    }
    values.update(fields)
    return Proposal.model_validate(values)


def long_diff(lines: int = 400) -> str:
    return "\n".join(
        f"+Line {n}: say one thing, then stop; details only on request." for n in range(lines)
    )


def test_evidence_counts_sessions_ratings_comments_and_failures() -> None:
    p = make_proposal()
    down = [Rating(rating=-1, comment="too long"), Rating(rating=-1, comment="  ")]
    sessions = [
        SessionEvidence(
            session_id=1,
            channel="telegram",
            turns=[
                Turn(message_id=1, role="user", text="q"),
                Turn(message_id=2, role="assistant", text="a", ratings=down),
            ],
        ),
        SessionEvidence(
            session_id=2,
            channel="line",
            turns=[Turn(message_id=3, role="assistant", text="a", ratings=[Rating(rating=1)])],
        ),
        SessionEvidence(
            session_id=3,
            channel="line",
            turns=[Turn(message_id=4, role="assistant", text="oops", kind="error")],
        ),
    ]
    evidence = evidence_of(p, sessions)
    assert evidence.summary() == "3 sessions, 2 👎 (1 with a comment), 1 👍, 1 failed answer"
    assert evidence.comments == ("too long",)
    assert Evidence(sessions=3, down=2, commented=2).summary() == "3 sessions, 2 👎 with comments"
    assert Evidence(sessions=1).summary() == "1 session"


def test_outcomes_name_who_decided_when_and_why() -> None:
    at = {"decided_at": 1_700_000_000.0}
    approved = make_proposal(status="approved", decided_by="cli:alice", **at)
    assert Card(approved, Evidence(1), "").outcome() == (
        "✅ Approved by alice (terminal) at 2023-11-14 22:13 UTC"
    )
    rejected = make_proposal(status="rejected", decided_by="telegram:5", reason="dup", **at)
    assert Card(rejected, Evidence(1), "", "Alice (@alice)").outcome() == (
        "❌ Rejected by Alice (@alice): dup"
    )
    no_reason = make_proposal(status="rejected", decided_by="web", **at)
    assert Card(no_reason, Evidence(1), "").outcome() == (
        "❌ Rejected by the web console at 2023-11-14 22:13 UTC"
    )
    assert Card(make_proposal(), Evidence(1), "").outcome() is None


def test_a_telegram_card_keeps_within_4096_characters_and_says_when_its_diff_was_cut() -> None:
    card = Card(
        make_proposal(description="d" * 1024), Evidence(3, down=2, commented=2), long_diff()
    )
    part = card_part(card)
    visible = html_to_plain(part.html)  # raises where Telegram could not parse the HTML
    assert visible == part.plain
    assert 3500 < utf16_len(visible) <= 4096
    assert "more diff lines not shown: tap Full diff." in visible
    assert "Users asked for shorter answers <b>twice</b> & more." in visible  # escaped, not markup
    kept = visible.split("\n\n")[1]
    assert kept.splitlines()[-2].endswith("details only on request.")  # cut at a line

    short = card_part(Card(make_proposal(), Evidence(1), "+one line"))
    assert "not shown" not in short.plain and "+one line" in short.plain
    decided = make_proposal(status="rejected", decided_by="web", reason="no", decided_at=1.0)
    tail = card_part(Card(decided, Evidence(1), long_diff()))
    assert tail.plain.endswith("❌ Rejected by the web console: no")
    assert utf16_len(tail.plain) <= 4096


def test_fit_cuts_at_lines_and_cuts_a_single_huge_line() -> None:
    assert fit("ab\ncd\nef", 5) == ("ab\ncd", 1)
    assert fit("x" * 50, 10) == ("x" * 9 + "…", 0)
    assert fit("", 10) == ("", 0)


def test_button_data_is_short_signed_and_refused_when_forged() -> None:
    signer = CardSigner("123456:TEST-TOKEN")
    data = signer.data("approve", 10**18 - 1)
    assert len(data.encode()) <= 64
    assert signer.verify(data) == ("approve", 10**18 - 1)
    assert signer.verify(signer.data("skip", 3)) == ("skip", 3)
    code, pid, signature = data.split(":")
    assert signer.verify(f"pr:{pid}:{signature}") is None  # another action
    assert signer.verify(f"{code}:{int(pid) - 1}:{signature}") is None  # another proposal
    assert CardSigner("another secret").verify(data) is None
    for junk in ("", "pa:1", "pa:x:abc", "rate:1:+1", data + "A", None):
        assert signer.verify(junk) is None


def test_a_line_card_has_short_postbacks_and_alt_text_and_no_buttons_once_decided(
    make_settings: Callable[..., Settings],
) -> None:
    cards = CardBubbles(CardSigner("s"))
    message = cards.message(Card(make_proposal(), Evidence(3), long_diff())).to_dict()
    actions = postbacks(message)
    assert list(actions) == ["Approve", "Reject", "Full diff"]
    assert all(len(data) <= 300 for data in actions.values())
    assert all(cards.signer.verify(data) for data in actions.values())
    assert len(message["altText"]) <= 400
    body = str(message["contents"]["body"])
    assert "more diff lines not shown" in body and len(str(message)) < 30_000

    decided = make_proposal(status="approved", decided_by="web", decided_at=1.0)
    message = cards.message(Card(decided, Evidence(3), "+x")).to_dict()
    assert postbacks(message) == {} and "Approved by the web console" in message["altText"]
