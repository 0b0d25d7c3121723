"""Admins reviewing in chat: card presses, the reason after a rejection, review commands.

Admin rights come first: a press or command from anyone who is not an admin of the
channel is answered "not allowed", logged, and changes nothing. Then the button's
signature: data this bot did not make is refused. After a rejection (recorded at
once) the bot asks for an optional reason; on Telegram only a reply to that prompt
becomes it, on LINE the admin's next text, or Skip. The "what went wrong?" question
after 👎 is another purpose of the same store, so neither takes the other's answer.
Platforms differ in how they show things (`Responder`); the words and rules are here.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from gateway.conversation.models import Press, Profile
from gateway.conversation.ports import ConversationStore, Decisions, Responder, Synthesis
from gateway.conversation.questions import Questions
from gateway.core.models import ChatRef
from gateway.core.records import Awaiting
from gateway.errors import ChannelError, ProposalNotFound, SkillError, StoreError
from gateway.skills.card_buttons import CardAction
from gateway.skills.cards import Card, build_card, decider_label, full_diff, when
from gateway.skills.overview import skills_overview
from gateway.skills.proposals import Proposal
from gateway.skills.review import Decision
from gateway.skills.synthesizer import RunSummary
from gateway.usage import Prices, usage_report, usage_text

log = logging.getLogger(__name__)

ADMIN_COMMANDS = (
    ("proposals", "Proposals waiting for review, with their buttons"),
    ("skills", "Skills with their source, status and 👍 rate"),
    ("synthesize", "Run a synthesis pass now"),
    ("usage", "Answers, tokens and cost of the last 7 days"),
)
"""Commands for TELEGRAM_ADMIN_IDS and LINE_ADMIN_IDS; in Telegram's menu for admins only."""
ADMIN_COMMAND_NAMES = tuple(name for name, _ in ADMIN_COMMANDS)
REASON_PURPOSE = "reject_reason"
MAX_REASON = 2000
MAX_CARDS_SHOWN = 5
"""Most pending cards one /proposals shows; the oldest come first."""

ADMIN_HELP = (
    "\n\nFor admins: /proposals shows the proposals waiting for review, /skills lists the"
    " skills and how their answers were rated, /synthesize runs a synthesis pass now,"
    " /usage shows the tokens and cost of the last 7 days."
)
NOT_ALLOWED = "Not allowed: only the bot's admins can review proposals."
INVALID_BUTTON = "This button is not valid."
PRIVATE_ONLY = "Review commands work only in a private chat with me."
GONE = "This proposal no longer exists."
NO_PENDING = "No proposals are waiting for review."
USAGE_DAYS = 7
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


class ReviewChat:
    """Card presses, rejection reasons and review commands for one channel's admins."""

    def __init__(
        self,
        profile: Profile,
        store: ConversationStore,
        review: Decisions,
        synthesis: Synthesis,
        questions: Questions,
        *,
        prices: Prices | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.profile = profile
        self.store = store
        self.review = review
        self.synthesis = synthesis
        self.questions = questions
        self.prices = prices or {}
        self.clock = clock

    @property
    def channel(self) -> str:
        return self.profile.channel

    def is_admin(self, user_id: str | None) -> bool:
        return self.profile.audience.is_admin(user_id)

    async def card(self, p: Proposal) -> Card:
        return await build_card(p, self.review, self.store)

    # ---- presses --------------------------------------------------------------------------

    async def on_press(self, press: Press, out: Responder) -> None:
        """Approve, Reject, Full diff or Skip on a card."""
        user = press.chat.user_id
        if user is None or not self.is_admin(user):
            log.warning(
                "%s user %s pressed a proposal button but is not an admin; nothing changed",
                self.profile.who,
                user,
            )
            await out.acknowledge(NOT_ALLOWED)
            return
        verified = self.profile.signer.verify(press.data)
        if verified is None or verified[0] not in self.profile.card_actions:
            log.warning(
                "refused card button data %r from %s user %s",
                press.data[:80],
                self.profile.who,
                user,
            )
            await out.acknowledge(INVALID_BUTTON)
            return
        action, proposal_id = verified
        if action == "diff":
            await self._full_diff(proposal_id, out)
        elif action == "skip":
            question = await self.questions.open(press.chat, user, REASON_PURPOSE)
            if question is not None and question.ref == str(proposal_id):
                await self.store_reason(question, None)
            await out.acknowledge(NO_REASON)
        else:
            await self._decide(action, proposal_id, user, out)

    async def _decide(
        self, action: CardAction, proposal_id: int, user: str, out: Responder
    ) -> None:
        decider = f"{self.channel}:{user}"
        name = await out.reviewer_name()
        if name:
            await self.store.set_reviewer_name(decider, name)
        result = await self.decide(action, proposal_id, decider)
        if result.rejected_now and result.decision is not None:
            p = result.decision.proposal
            prompt = await out.ask_reason(p, result.text)
            await self.questions.ask(
                out.chat,
                user,
                REASON_PURPOSE,
                str(p.id),
                prompt_message_id=prompt,
                seconds=self.profile.dialect.reason_seconds,
            )
            return
        await out.acknowledge(result.text)
        if result.decision is not None and result.decision.outcome == "decided":
            # Perhaps an older copy that no sync edits: show the decision on this one too.
            card = await self.card(await self.review.get(result.decision.proposal.id))
            try:
                await out.show_card(card)
            except ChannelError as exc:
                log.info("could not update an older card copy: %s", exc)

    async def _full_diff(self, proposal_id: int, out: Responder) -> None:
        try:
            p = await self.review.get(proposal_id)
        except ProposalNotFound:
            await out.acknowledge(GONE)
            return
        await out.send_diff(p, await full_diff(p, self.review, self.store))

    async def already(self, p: Proposal) -> str:
        """E.g. "Already rejected by Alice at 2026-05-01 12:34 UTC."."""
        name = await self.store.reviewer_name(p.decided_by) if p.decided_by else None
        who = decider_label(p.decided_by, name)
        return f"Already {p.status.replace('_', ' ')} by {who} at {when(p.decided_at)}."

    async def decide(self, action: CardAction, proposal_id: int, decider: str) -> Decided:
        """Approve or reject for a chat admin; the first decision wins, later ones say who won."""
        try:
            if action == "approve":
                decision = await self.review.approve(proposal_id, decider)
            else:
                decision = await self.review.reject(proposal_id, decider)
        except ProposalNotFound:
            return Decided(GONE)
        except (OSError, SkillError, StoreError) as exc:
            # Answered, so the admin's button stops spinning; the proposal stays pending.
            log.exception("deciding proposal #%d for %s failed", proposal_id, decider)
            return Decided(f"Could not apply proposal #{proposal_id}: {exc}"[:200])
        p = decision.proposal
        if decision.outcome == "decided":
            return Decided(await self.already(p), decision)
        if decision.outcome == "stale":
            return Decided(
                "⚠️ Not applied: the skill changed after this proposal was made.", decision
            )
        if decision.outcome == "rejected":
            return Decided(f"❌ Rejected proposal #{p.id} ({p.slug}).", decision)
        return Decided(f"✅ Approved: {p.slug} is live now.", decision)

    # ---- reasons --------------------------------------------------------------------------

    async def store_reason(self, question: Awaiting, text: str | None) -> None:
        """Keep the answer as the rejection's reason (None: skipped) and close the question."""
        if text is not None:
            await self.review.give_reason(int(question.ref), text.strip()[:MAX_REASON])
        await self.questions.close(question)

    async def take_reason(self, question: Awaiting, text: str, out: Responder) -> bool:
        """Keep an admin's answer to "why reject?"; False when the user is no admin."""
        if not self.is_admin(question.user_id):
            return False
        await self.store_reason(question, text)
        await out.notice(REASON_STORED, quote=True)
        return True

    # ---- commands -------------------------------------------------------------------------

    async def on_command(self, command: str, chat: ChatRef, out: Responder) -> None:
        """/proposals, /skills, /usage or /synthesize from someone who wrote to the bot."""
        if not self.is_admin(chat.user_id):
            log.warning(
                "%s user %s tried /%s: not an admin", self.profile.who, chat.user_id, command
            )
            await out.notice(NOT_ALLOWED)
            return
        if chat.is_group:
            await out.notice(PRIVATE_ONLY)
            return
        if command == "proposals":
            await self._proposals(chat, out)
        elif command == "skills":
            await out.notice(await self.skills_text())
        elif command == "usage":
            report = await usage_report(self.store, self.prices, USAGE_DAYS, self.clock())
            await out.notice(usage_text(report))
        else:
            if self.profile.dialect.running_synthesis:
                await out.notice(self.profile.dialect.running_synthesis)
            await out.notice(synthesis_text(await self.synthesis.run("chat")))

    async def _proposals(self, chat: ChatRef, out: Responder) -> None:
        pending = await self.store.pending_proposals()
        if not pending:
            await out.notice(NO_PENDING)
            return
        shown = pending[: out.cards_per_listing(len(pending))]
        more = more_pending(len(shown), len(pending)) if len(pending) > len(shown) else None
        ids = await out.show_cards([await self.card(p) for p in shown], more)
        for n, p in enumerate(shown):
            # This copy is now the one kept up to date in this chat (one that failed to
            # arrive earlier counts as delivered now; decisions reach it).
            await self.store.card_delivered(
                p.id,
                self.channel,
                chat.chat_id,
                ids[n] if n < len(ids) else None,
                status=p.status,
                reason=p.reason,
            )

    async def skills_text(self) -> str:
        return await skills_text(self.store, self.synthesis)


async def skills_text(store: ConversationStore, synthesis: Synthesis) -> str:
    """Every registered skill: source, status, and its measured effect on ratings."""
    pending = {p.slug: p.id for p in await store.pending_proposals()}
    effects = await synthesis.effects()
    return skills_overview(await store.skill_records(), effects, pending)


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
