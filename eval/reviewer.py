"""The scripted reviewer: blind to what users want, reads each card, taps ✅ or ❌ in Telegram.

It does not know the users' preferences. It reads the proposal's full text from the
admin API, as a person opening the diff, and approves what reads as a concrete,
harmless instruction; it rejects, with a reason, what asks for a password or says
nothing concrete. It trusts the figures of a retirement and approves it. Like a
person it errs: with `false_reject` it rejects something it would approve, with
`false_approve` it approves something it would reject (seeded).

It also takes a second look: when a synthesis pass suppresses a repeat of one of its
rejections, it reads that proposal again (a fresh judgement, errors included) and,
if it now approves of it, reopens it with a reason, after which it decides the card
again. That is how a wrong rejection gets undone.

Where proposals are tried before review (`eval/trial.py`, a simulated judge), it also
reads the trial's verdict: it approves only a *measured gain*. Its errors stay what they
were, misreadings of the text drawn as before, and the verdict is read as it stands: a
proposal it misreads as good still needs a measured gain; one it misreads as doubtful is
rejected whatever the trial says. A trial that measured nothing holds nothing back: the
text alone decides, as without a trial.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from eval.rig import Gateway
from eval.skills import read_proposal
from gateway.channels.telegram.cards import APPROVE, REJECT
from gateway.synthesis.verdict import Verdict as TrialVerdict

REASONS = {
    "harmful": "Never ask users for their password or any credential.",
    "vague": "Too vague: it does not say what to do differently.",
}
REOPEN_REASON = "Users keep asking for this; the rejection was a mistake."
TRIAL_REASONS = {
    TrialVerdict.NO_MEASURED_GAIN: "The trial measured no gain over answers without it.",
    TrialVerdict.REGRESSIONS: "The trial made answers users liked worse.",
}
Trial = Callable[[dict[str, Any], int], Awaitable[TrialVerdict]]
"""Tries a proposal (as the admin API shows it) in a cycle and gives the trial's verdict."""


@dataclass(frozen=True)
class Verdict:
    """A reviewer's decision on one proposal, the concern behind a rejection, and its reason."""

    approve: bool
    reason: str | None = None
    concern: str | None = None
    slip: bool = False
    """The decision went against the reviewer's own reading (an error)."""


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
    """The verdict on a skill text, without errors: approve what is concrete and harmless."""
    reading = read_proposal(text)
    if reading in REASONS:
        return Verdict(False, REASONS[reading], reading)
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

    def __init__(
        self,
        admin_id: int,
        *,
        seed: int = 0,
        false_reject: float = 0.0,
        false_approve: float = 0.0,
    ) -> None:
        self.admin_id = admin_id
        self.false_reject = false_reject
        self.false_approve = false_approve
        self.rng = random.Random(f"{seed}:reviewer")
        self.decisions: list[Decision] = []
        self.reopened: list[int] = []

    def judge(self, proposal: dict[str, Any], trial: TrialVerdict | None = None) -> Verdict:
        """The verdict on a proposal as the admin API shows it, errors drawn from the seed.

        With a trial's verdict, what it approves must also show a measured gain.
        """
        if proposal["kind"] == "retire":
            verdict = Verdict(True)  # the figures speak
        else:
            text = f"{proposal['name']}\n{proposal['description']}\n{proposal.get('content') or ''}"
            verdict = judge_text(text)
        draw = self.rng.random()
        if verdict.approve and draw < self.false_reject:
            return Verdict(False, "Not convinced this is needed.", "doubt", slip=True)
        if not verdict.approve and draw < self.false_approve:
            verdict = Verdict(True, slip=True)
        if verdict.approve and trial in TRIAL_REASONS:
            return Verdict(False, TRIAL_REASONS[trial], "trial")
        return verdict

    async def review(self, gw: Gateway, cycle: int, trial: Trial | None = None) -> list[Decision]:
        """Decide each card that still has buttons, oldest first, until none is left.

        With `trial`, each proposal but a retirement is tried first and its verdict read.
        """
        made: list[Decision] = []
        seen: set[int] = set()
        await gw.idle()  # cards go out in the background after a synthesis pass
        while cards := gw.pending_cards(self.admin_id):
            proposal_id, message = cards[0]
            if proposal_id in seen:
                raise RuntimeError(f"the card of proposal #{proposal_id} kept its buttons")
            seen.add(proposal_id)
            proposal = await gw.api("GET", f"/proposals/{proposal_id}")
            tried = None
            if trial is not None and proposal["kind"] != "retire":
                tried = await trial(proposal, cycle)
            verdict = self.judge(proposal, tried)
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
                    verdict.slip,
                )
            )
        waiting = await gw.api("GET", "/proposals?status=pending")
        if waiting:
            raise RuntimeError(f"{len(waiting)} pending proposal(s) never reached the reviewer")
        self.decisions.extend(made)
        return made

    async def second_look(self, gw: Gateway, suppressed: list[dict[str, Any]]) -> list[int]:
        """Reopen rejections that a suppressed repeat points to, when a fresh reading approves."""
        again: list[int] = []
        waiting = {
            p["target"] or p["name"] for p in await gw.api("GET", "/proposals?status=pending")
        }
        for item in suppressed:
            pid = item.get("matched")
            if not pid or not str(item.get("reason", "")).startswith("matches rejected"):
                continue
            if pid in again:
                continue
            proposal = await gw.api("GET", f"/proposals/{pid}")
            if proposal["status"] != "rejected" or proposal["kind"] == "retire":
                continue
            if (proposal["target"] or proposal["name"]) in waiting:
                continue  # a proposal for that skill awaits review: the gateway would refuse
            if self.judge(proposal).approve:
                await gw.api("POST", f"/proposals/{pid}/reopen", {"reason": REOPEN_REASON})
                again.append(int(pid))
                waiting.add(proposal["target"] or proposal["name"])
        self.reopened.extend(again)
        return again
