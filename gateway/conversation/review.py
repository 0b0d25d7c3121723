"""What the chat channels say and do for admins who review: decisions, reasons, commands.

Telegram and LINE differ in how they show things; the words, the rules and the
calls into the review operations are the same and live here.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gateway.core.records import Awaiting
from gateway.errors import ProposalNotFound, SkillError
from gateway.skills.card_buttons import CardAction
from gateway.skills.cards import decider_label, when
from gateway.skills.overview import skills_overview
from gateway.skills.proposals import Proposal
from gateway.skills.review import Decision
from gateway.skills.synthesizer import RunSummary

if TYPE_CHECKING:
    from gateway.channels.base import Services

log = logging.getLogger(__name__)

ADMIN_COMMANDS = (
    ("proposals", "Proposals waiting for review, with their buttons"),
    ("skills", "Skills with their source, status and 👍 rate"),
    ("synthesize", "Run a synthesis pass now"),
)
"""Commands for TELEGRAM_ADMIN_IDS and LINE_ADMIN_IDS; in Telegram's menu for admins only."""
ADMIN_COMMAND_NAMES = tuple(name for name, _ in ADMIN_COMMANDS)
REASON_PURPOSE = "reject_reason"
MAX_REASON = 2000
MAX_CARDS_SHOWN = 5
"""Most pending cards one /proposals shows; the oldest come first."""

ADMIN_HELP = (
    "\n\nFor admins: /proposals shows the proposals waiting for review, /skills lists the"
    " skills and how their answers were rated, /synthesize runs a synthesis pass now."
)
NOT_ALLOWED = "Not allowed: only the bot's admins can review proposals."
INVALID_BUTTON = "This button is not valid."
PRIVATE_ONLY = "Review commands work only in a private chat with me."
GONE = "This proposal no longer exists."
NO_PENDING = "No proposals are waiting for review."
REASON_STORED = "Thanks, the reason is stored with the rejection."
NO_REASON = "Okay, rejected without a reason."


def more_pending(shown: int, total: int) -> str:
    return (
        f"Showing the {shown} oldest of {total} pending proposals;"
        " decide these and send /proposals again for the rest."
    )


@dataclass(frozen=True)
class Decided:
    """What a press did: the acknowledgement to show, and the decision if one was made."""

    text: str
    decision: Decision | None = None

    @property
    def rejected_now(self) -> bool:
        return self.decision is not None and self.decision.outcome == "rejected"


async def already(services: Services, p: Proposal) -> str:
    """E.g. "Already rejected by Alice at 2026-05-01 12:34 UTC."."""
    name = await services.store.reviewer_name(p.decided_by) if p.decided_by else None
    who = decider_label(p.decided_by, name)
    return f"Already {p.status.replace('_', ' ')} by {who} at {when(p.decided_at)}."


async def decide(services: Services, action: CardAction, proposal_id: int, decider: str) -> Decided:
    """Approve or reject for a chat admin; the first decision wins, later ones say who won."""
    review = services.review
    try:
        if action == "approve":
            decision = await review.approve(proposal_id, decider)
        else:
            decision = await review.reject(proposal_id, decider)
    except ProposalNotFound:
        return Decided(GONE)
    except (OSError, SkillError) as exc:
        log.exception("approving proposal #%d for %s failed", proposal_id, decider)
        return Decided(f"Could not apply proposal #{proposal_id}: {exc}"[:200])
    p = decision.proposal
    if decision.outcome == "decided":
        return Decided(await already(services, p), decision)
    if decision.outcome == "stale":
        return Decided("⚠️ Not applied: the skill changed after this proposal was made.", decision)
    if decision.outcome == "rejected":
        return Decided(f"❌ Rejected proposal #{p.id} ({p.slug}).", decision)
    return Decided(f"✅ Approved: {p.slug} is live now.", decision)


async def ask_reason(
    services: Services,
    channel: str,
    chat_id: str,
    user_id: str,
    proposal_id: int,
    *,
    prompt_message_id: str | None = None,
    minutes: float = 10,
) -> None:
    """Remember that the user's answer (on Telegram: reply) is the rejection's reason."""
    now = time.time()
    await services.store.set_awaiting(
        Awaiting(
            channel=channel,
            chat_id=chat_id,
            user_id=user_id,
            purpose=REASON_PURPOSE,
            ref=str(proposal_id),
            prompt_message_id=prompt_message_id,
            expires_at=now + minutes * 60,
            created_at=now,
        )
    )


async def pending_reason(
    services: Services, channel: str, chat_id: str, user_id: str
) -> Awaiting | None:
    """The user's open "why was it rejected?" question in this chat, if any."""
    question = await services.store.peek_awaiting(channel, chat_id, user_id)
    return question if question is not None and question.purpose == REASON_PURPOSE else None


async def store_reason(services: Services, question: Awaiting, text: str | None) -> None:
    """Keep the answer as the rejection's reason (None: skipped) and close the question."""
    if text is not None:
        await services.review.give_reason(int(question.ref), text.strip()[:MAX_REASON])
    await services.store.take_awaiting(question.channel, question.chat_id, question.user_id)


async def skills_text(services: Services) -> str:
    """Every registered skill: source, status, and its measured effect on ratings."""
    store = services.store
    pending = {p.slug: p.id for p in await store.pending_proposals()}
    effects = await services.synthesizer.effects()
    return skills_overview(await store.skill_records(), effects, pending)


async def synthesize_text(services: Services) -> str:
    """Run one synthesis pass now and say what it did."""
    summary = await services.synthesizer.run("chat")
    return synthesis_text(summary)


def synthesis_text(summary: RunSummary) -> str:
    if summary.status == "busy":
        return "Another synthesis pass is running; try again in a few minutes."
    if summary.status == "failed":
        return f"Synthesis run {summary.run_id or '-'} failed: {summary.error}"
    counts = (
        f"{len(summary.proposed)} proposed, {len(summary.suppressed)} suppressed,"
        f" {len(summary.refused)} refused from {summary.sessions} session(s)"
    )
    waiting = sum(p.status == "pending" for p in summary.proposed)
    follow = " Their cards go to every admin." if waiting else ""
    return f"Synthesis run {summary.run_id} done: {counts}.{follow}"
