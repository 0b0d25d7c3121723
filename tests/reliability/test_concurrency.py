"""Admins deciding the same proposal at the same moment on different channels: one decision.

The presses are posted together (`asyncio.gather`), each is stored and handled on its own
inbox key, so the two review operations really run side by side. Whichever wins, the
database holds exactly one decision, the files match it, every admin is told the outcome
and every copy of the card shows it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from gateway.config import Settings
from gateway.review.proposals import PROPOSED_FILE
from tests.cards_support import (
    ALICE,
    BOB,
    LINE_ADMIN,
    LINE_SECRET,
    Rig,
    fakes,
    postbacks,
    rig_settings,
    running,
)
from tests.fakes.line_api import postback_event, sign, webhook_body
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import make_callback_update
from tests.synthesis_support import AUTH
from tests.telegram_harness import SECRET as TG_SECRET

_updates = iter(range(50_000, 60_000))


def telegram_press(rig: Rig, proposal: int, label: str, admin: int) -> dict[str, Any]:
    """A press on the admin's Telegram card of this proposal."""
    card = next(c for c in rig.cards_in(admin) if c["text"].startswith(f"<b>Proposal #{proposal}"))
    buttons = [b for row in card["reply_markup"]["inline_keyboard"] for b in row]
    data = next(b["callback_data"] for b in buttons if label in b["text"])
    return make_callback_update(
        next(_updates),
        data,
        chat_id=admin,
        user_id=admin,
        message_id=card["message_id"],
        message_text=card["text"],
        first_name="Alice" if admin == ALICE else "Bob",
        username="alice" if admin == ALICE else "bob",
    )


def line_press(rig: Rig, proposal: int, label: str) -> bytes:
    """A postback on the LINE admin's card of this proposal, as a webhook body."""
    card = next(c for c in rig.line_cards() if f"#{proposal}" in c["altText"])
    token = rig.line.issue_reply_token(to=LINE_ADMIN)
    return webhook_body(
        postback_event(postbacks(card)[label], user_id=LINE_ADMIN, reply_token=token)
    )


async def post(rig: Rig, who: str, press: Any) -> int:
    if who == "web":
        path = f"/admin/api/proposals/{press[0]}/{press[1]}"
        resp = await rig.client.post(path, headers=AUTH)
    elif who == "line":
        headers = {"X-Line-Signature": sign(LINE_SECRET, press), "Content-Type": "application/json"}
        resp = await rig.client.post("/webhook/line", data=press, headers=headers)
    else:
        headers = {"X-Telegram-Bot-Api-Secret-Token": TG_SECRET}
        resp = await rig.client.post("/webhook/telegram", json=press, headers=headers)
    return resp.status


ROUNDS = [
    # (who presses what), all at the same moment
    [("telegram", ALICE, "Approve"), ("line", None, "Reject")],
    [("telegram", ALICE, "Reject"), ("line", None, "Approve")],
    [
        ("telegram", ALICE, "Approve"),
        ("telegram", BOB, "Reject"),
        ("line", None, "Reject"),
        ("web", None, "approve"),
    ],
]


@pytest.mark.parametrize(
    "presses", ROUNDS, ids=["tg-approve-line-reject", "tg-reject-line-approve", "four-at-once"]
)
async def test_simultaneous_decisions_on_two_channels_make_exactly_one(
    presses: list[tuple[str, int | None, str]],
    make_settings: Callable[..., Settings],
    fake_llm: FakeOpenAI,
) -> None:
    async with fakes() as (telegram, line):
        settings = rig_settings(make_settings, fake_llm, telegram, line)
        async with running(settings, telegram, line, fake_llm) as rig:
            pid = await rig.propose("chat-brevity")
            requests = []
            for who, admin, label in presses:
                if who == "telegram":
                    assert admin is not None
                    requests.append(post(rig, who, telegram_press(rig, pid, label, admin)))
                elif who == "line":
                    requests.append(post(rig, who, line_press(rig, pid, label)))
                else:
                    requests.append(post(rig, who, (pid, label)))
            acks_before = len(rig.acks())
            line_before = len(line.delivered_texts(LINE_ADMIN))
            statuses = await asyncio.gather(*requests)
            await rig.idle()

            status, p = await rig.api("GET", f"/proposals/{pid}")
            rows = await rig.parts.store.run(
                lambda db: [dict(r) for r in db.query("select proposal_id from rejections")]
            )
            skill = settings.skills_dir / "chat-brevity"
            acks = rig.acks()[acks_before:]
            line_texts = line.delivered_texts(LINE_ADMIN)[line_before:]
            tg_cards = {admin: rig.cards_in(admin)[-1] for admin in (ALICE, BOB)}

    assert all(s in (200, 409) for s in statuses), statuses
    assert status == 200 and p["status"] in ("approved", "rejected")
    approved = p["status"] == "approved"
    assert (rows == []) is approved  # a tombstone exactly when it was rejected
    assert (skill / "SKILL.md").is_file() is approved
    assert not (skill / PROPOSED_FILE).exists()
    # Exactly one press won; every other presser is told who decided.
    winners = [
        t for t in acks + line_texts if t.startswith(("✅ Approved:", "❌ Rejected proposal"))
    ]
    web = [s for (who, _, _), s in zip(presses, statuses, strict=True) if who == "web"]
    assert len(winners) + sum(s == 200 for s in web) == 1, (acks, line_texts, statuses)
    chat_presses = sum(who != "web" for who, _, _ in presses)
    told = [t for t in acks + line_texts if t.startswith(("✅", "❌", "Already"))]
    assert len(told) >= chat_presses, (acks, line_texts)
    # Every copy of the card shows the one decision and has no buttons left.
    shown = "✅ Approved by" if approved else "❌ Rejected by"
    for card in tg_cards.values():
        assert shown in card["text"] and "reply_markup" not in card
    assert any(shown in t for t in line_texts) or p["decided_by"].startswith("line:")
