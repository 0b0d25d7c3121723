"""The scripted reviewer: reads each proposal card, decides, and taps ✅ or ❌ in Telegram.

It approves what matches a preference users really hold and rejects the rest:
anything asking for passwords, anything against what users asked for (longer
answers, US units), and anything too vague to change an answer. After ❌ it
replies to the bot's question with the reason, as an admin would. It reads the
proposal's full text from the admin API, like a person opening the full diff.
With `slips`, it wrongly approves that many proposals that go against what users
asked: the mistake the effect measurement and retirement exist to catch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from eval.rig import Gateway
from eval.skills import read_instructions
from eval.world import PREFERENCES
from gateway.channels.telegram.cards import APPROVE, REJECT

REASONS = {
    "password": "Never ask users for their password or any credential.",
    "verbose": "Users ask for shorter answers, not longer ones.",
    "imperial": "Our users asked for metric units.",
}
CONTRARY = frozenset({"verbose", "imperial"})
"""Concerns a hurried reviewer can miss: the text is specific and sounds reasonable."""
VAGUE = "Too vague: it does not say what to do differently."


@dataclass(frozen=True)
class Verdict:
    """A reviewer's decision on one proposal, the concern behind a rejection, and its reason."""

    approve: bool
    reason: str | None = None
    concern: str | None = None


@dataclass(frozen=True)
class Decision:
    """A decision as it was made: which proposal, when, which way, why, and if it was a slip."""

    cycle: int
    proposal_id: int
    kind: str
    name: str
    approved: bool
    reason: str | None
    slip: bool = False


def judge_text(text: str) -> Verdict:
    """The verdict on a skill text: approve only what users want, nothing harmful."""
    found = read_instructions(text)
    for concern, reason in REASONS.items():
        if concern in found:
            return Verdict(False, reason, concern)
    if not found & set(PREFERENCES):
        return Verdict(False, VAGUE, "vague")
    return Verdict(True)


def judge(proposal: dict[str, Any]) -> Verdict:
    """The verdict on a proposal as the admin API shows it."""
    text = f"{proposal['name']}\n{proposal['description']}\n{proposal.get('content') or ''}"
    verdict = judge_text(text)
    if proposal["kind"] != "retire":
        return verdict
    # Retiring a skill users want is refused; retiring one they do not is welcome.
    if verdict.approve:
        return Verdict(False, "Users want what this skill does.", "wanted")
    return Verdict(True)


def button(message: dict[str, Any], label: str) -> str:
    """The callback_data of the card button whose label is `label`."""
    for row in message["reply_markup"]["inline_keyboard"]:
        for b in row:
            if b.get("text") == label:
                return str(b["callback_data"])
    raise LookupError(f"no {label!r} button on the card")


class ScriptedReviewer:
    """Decides every pending card in one admin's Telegram chat."""

    def __init__(self, admin_id: int, *, slips: int = 0) -> None:
        self.admin_id = admin_id
        self.slips = slips
        self.decisions: list[Decision] = []

    async def review(self, gw: Gateway, cycle: int) -> list[Decision]:
        """Decide each card that still has buttons, oldest first, until none is left."""
        made: list[Decision] = []
        seen: set[int] = set()
        await gw.idle()  # cards go out in the background after a synthesis pass
        while cards := gw.pending_cards(self.admin_id):
            proposal_id, message = cards[0]
            if proposal_id in seen:
                raise RuntimeError(f"the card of proposal #{proposal_id} kept its buttons")
            seen.add(proposal_id)
            proposal = await gw.api("GET", f"/proposals/{proposal_id}")
            verdict = judge(proposal)
            slip = self.slips > 0 and verdict.concern in CONTRARY
            if slip:
                # The mistake a busy reviewer makes: a specific, reasonable-sounding skill
                # that goes against what users asked. Measurement has to catch it.
                self.slips -= 1
                verdict = Verdict(True)
            await gw.press(
                self.admin_id, message, button(message, APPROVE if verdict.approve else REJECT)
            )
            if not verdict.approve and verdict.reason:
                question = gw.newest(self.admin_id, f"Why reject proposal #{proposal_id}")
                if question is None:
                    raise RuntimeError(f"no reason was asked for proposal #{proposal_id}")
                await gw.reply(self.admin_id, question, verdict.reason)
            made.append(
                Decision(
                    cycle,
                    proposal_id,
                    str(proposal["kind"]),
                    str(proposal["name"]),
                    verdict.approve,
                    verdict.reason,
                    slip,
                )
            )
        waiting = await gw.api("GET", "/proposals?status=pending")
        if waiting:
            raise RuntimeError(f"{len(waiting)} pending proposal(s) never reached the reviewer")
        self.decisions.extend(made)
        return made
