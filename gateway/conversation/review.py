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

from gateway.config import QuotaSettings
from gateway.conversation.models import Press, Profile
from gateway.conversation.ports import (
    Decisions,
    ReviewChatStore,
    ReviewReplies,
    SkillListing,
    Synthesis,
)
from gateway.conversation.questions import Questions
from gateway.core.models import ChatRef
from gateway.core.records import Awaiting
from gateway.errors import ChannelError, ProposalNotFound
from gateway.i18n import ENGLISH, N_, Np_, Texts
from gateway.review.answers import MAX_REASON, REVIEW_ERRORS, refusal
from gateway.review.buttons import CardAction
from gateway.review.cards import Card, build_card, decider_label, full_diff, when
from gateway.review.proposals import Proposal
from gateway.review.reviewer import Decision
from gateway.skills.overview import skills_overview
from gateway.synthesis.synthesizer import RunSummary
from gateway.usage import usage_report, usage_text

log = logging.getLogger(__name__)

ADMIN_COMMANDS = (
    ("proposals", N_("Proposals waiting for review, with their buttons")),
    ("skills", N_("Skills with their source, status and 👍 rate")),
    ("synthesize", N_("Run a synthesis pass now")),
    ("reopen", N_("Reopen a rejected proposal: /reopen ID reason")),
    ("usage", N_("Answers, tokens and cost of the last 7 days")),
)
"""Commands for TELEGRAM_ADMIN_IDS and LINE_ADMIN_IDS; in Telegram's menu for admins only."""
ADMIN_COMMAND_NAMES = tuple(name for name, _ in ADMIN_COMMANDS)
REASON_PURPOSE = "reject_reason"
MAX_CARDS_SHOWN = 5
"""Most pending cards one /proposals shows; the oldest come first."""

ADMIN_HELP = N_(
    "\n\nFor admins: /proposals shows the proposals waiting for review, /skills lists the"
    " skills and how their answers were rated, /synthesize runs a synthesis pass now,"
    " /reopen ID reason takes back a rejection, /usage shows the tokens and cost of the last"
    " 7 days."
)
NOT_ALLOWED = N_("Not allowed: only the bot's admins can review proposals.")
INVALID_BUTTON = N_("This button is not valid.")
PRIVATE_ONLY = N_("Review commands work only in a private chat with me.")
GONE = N_("This proposal no longer exists.")
NO_PENDING = N_("No proposals are waiting for review.")
REASON_STORED = N_("Thanks, the reason is stored with the rejection.")
NO_REASON = N_("Okay, rejected without a reason.")
MORE_PENDING = Np_(
    "Showing the {shown} oldest of {n} pending proposal;"
    " decide these and send /proposals again for the rest.",
    "Showing the {shown} oldest of {n} pending proposals;"
    " decide these and send /proposals again for the rest.",
)
ALREADY = {
    "approved": N_("Already approved by {who} at {at}."),
    "applied": N_("Already applied by {who} at {at}."),
    "rejected": N_("Already rejected by {who} at {at}."),
    "stale": N_("Already stale by {who} at {at}."),
    "rolled_back": N_("Already rolled back by {who} at {at}."),
}
"""What a press on a decided proposal says, by the status it has."""
ALREADY_DECIDED = N_("Already decided by {who} at {at}.")
COULD_NOT_APPLY = N_("Could not apply proposal #{id}: {error}")
NOT_APPLIED_STALE = N_("⚠️ Not applied: the skill changed after this proposal was made.")
REJECTED = N_("❌ Rejected proposal #{id} ({slug}).")
APPROVED = N_("✅ Approved: {slug} is live now.")
SYNTHESIS_BUSY = N_("Another synthesis pass is running; try again in a few minutes.")
SYNTHESIS_FAILED = N_("Synthesis run {run} failed: {error}")
SYNTHESIS_DONE = Np_(
    "Synthesis run {run} done: {proposed} proposed, {suppressed} suppressed,"
    " {refused} refused from {n} session.",
    "Synthesis run {run} done: {proposed} proposed, {suppressed} suppressed,"
    " {refused} refused from {n} sessions.",
)
CARDS_GO_TO_ADMINS = N_(" Their cards go to every admin.")
REOPEN_USAGE = N_(
    "Send /reopen followed by the number of a rejected proposal and why,"
    " e.g. /reopen 12 rejected by mistake."
)
REOPENED = N_("↩️ Reopened proposal #{id} ({slug}): it waits for review again.")
REOPENED_BECAUSE = N_(
    "↩️ Reopened proposal #{id} ({slug}) because: {reason}. It waits for review again."
)
NOT_REJECTED = N_("Proposal #{id} is not a rejected one, so there is nothing to reopen.")
REOPEN_WAITS = N_(
    "Proposal #{id} stays rejected for now: another proposal for {slug} awaits review;"
    " decide that one first."
)
USAGE_DAYS = 7
"""The days /usage reports on, today included."""


def command_args(text: str | None) -> str:
    """What follows the command word ("/reopen@bot 12 why" gives "12 why")."""
    parts = (text or "").strip().split(maxsplit=1)
    return parts[1] if len(parts) > 1 else ""


def more_pending(shown: int, total: int, texts: Texts = ENGLISH) -> str:
    return texts.plural(MORE_PENDING, total, shown=shown)


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
        store: ReviewChatStore,
        review: Decisions,
        synthesis: Synthesis,
        questions: Questions,
        quotas: QuotaSettings,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.profile = profile
        self.store = store
        self.review = review
        self.synthesis = synthesis
        self.questions = questions
        self.prices = quotas.prices()
        """LLM_PRICES, for /usage."""
        self.media_prices = quotas.media_prices()
        self.clock = clock

    @property
    def channel(self) -> str:
        return self.profile.channel

    def is_admin(self, user_id: str | None) -> bool:
        return self.profile.audience.is_admin(user_id)

    async def card(self, p: Proposal, texts: Texts = ENGLISH) -> Card:
        return await build_card(p, self.review, self.store, texts)

    # ---- presses --------------------------------------------------------------------------

    async def on_press(self, press: Press, out: ReviewReplies) -> None:
        """Approve, Reject, Full diff or Skip on a card."""
        user, texts = press.chat.user_id, out.texts
        if user is None or not self.is_admin(user):
            log.warning(
                "%s user %s pressed a proposal button but is not an admin; nothing changed",
                self.profile.who,
                user,
            )
            await out.acknowledge(texts(NOT_ALLOWED))
            return
        verified = self.profile.signer.verify(press.data)
        if verified is None or verified[0] not in self.profile.card_actions:
            log.warning(
                "refused card button data %r from %s user %s",
                press.data[:80],
                self.profile.who,
                user,
            )
            await out.acknowledge(texts(INVALID_BUTTON))
            return
        action, proposal_id = verified
        if action == "diff":
            await self._full_diff(proposal_id, out)
        elif action == "skip":
            question = await self.questions.open(press.chat, user, REASON_PURPOSE)
            if question is not None and question.ref == str(proposal_id):
                await self.store_reason(question, None)
            await out.acknowledge(texts(NO_REASON))
        else:
            await self._decide(action, proposal_id, user, out)

    async def _decide(
        self, action: CardAction, proposal_id: int, user: str, out: ReviewReplies
    ) -> None:
        decider = f"{self.channel}:{user}"
        name = await out.reviewer_name()  # kept with the decision, in its transaction
        result = await self.decide(action, proposal_id, decider, out.texts, name=name or None)
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
        edits = self.profile.capabilities.edit  # else the acknowledgement said the decision
        if edits and result.decision is not None and result.decision.outcome == "decided":
            # Perhaps an older copy that no sync edits: show the decision on this one too.
            p = await self.review.get(result.decision.proposal.id)
            card = await self.card(p, out.texts)
            try:
                await out.show_card(card)
            except ChannelError as exc:
                log.info("could not update an older card copy: %s", exc)

    async def _full_diff(self, proposal_id: int, out: ReviewReplies) -> None:
        try:
            p = await self.review.get(proposal_id)
        except ProposalNotFound as exc:
            await out.acknowledge(refused_text(exc, proposal_id, out.texts))
            return
        await out.send_diff(p, await full_diff(p, self.review, self.store))

    async def already(self, p: Proposal, texts: Texts = ENGLISH) -> str:
        """E.g. "Already rejected by Alice at 2026-05-01 12:34 UTC."."""
        name = await self.store.reviewer_name(p.decided_by) if p.decided_by else None
        who = decider_label(p.decided_by, name, texts, self.review.users)
        message = ALREADY.get(p.status, ALREADY_DECIDED)
        return texts(message, who=who, at=when(p.decided_at, texts))

    async def decide(
        self,
        action: CardAction,
        proposal_id: int,
        decider: str,
        texts: Texts = ENGLISH,
        *,
        name: str | None = None,
    ) -> Decided:
        """Approve or reject for a chat admin; the first decision wins, later ones say who won."""
        try:
            if action == "approve":
                decision = await self.review.approve(proposal_id, decider, name=name)
            else:
                decision = await self.review.reject(proposal_id, decider, name=name)
        except REVIEW_ERRORS as exc:
            # Answered, so the admin's button stops spinning; the proposal stays pending.
            return Decided(refused_text(exc, proposal_id, texts))
        p = decision.proposal
        if decision.outcome == "decided":
            return Decided(await self.already(p, texts), decision)
        if decision.outcome == "stale":
            return Decided(texts(NOT_APPLIED_STALE), decision)
        if decision.outcome == "rejected":
            return Decided(texts(REJECTED, id=p.id, slug=p.slug), decision)
        return Decided(texts(APPROVED, slug=p.slug), decision)

    # ---- reasons --------------------------------------------------------------------------

    async def store_reason(self, question: Awaiting, text: str | None) -> None:
        """Keep the answer as the rejection's reason (None: skipped) and close the question."""
        if text is not None:
            await self.review.give_reason(int(question.ref), text.strip()[:MAX_REASON])
        await self.questions.close(question)

    async def take_reason(self, question: Awaiting, text: str, out: ReviewReplies) -> bool:
        """Keep an admin's answer to "why reject?"; False when the user is no admin."""
        if not self.is_admin(question.user_id):
            return False
        await self.store_reason(question, text)
        await out.notice(out.texts(REASON_STORED), quote=True)
        return True

    # ---- commands -------------------------------------------------------------------------

    async def on_command(
        self, command: str, chat: ChatRef, out: ReviewReplies, args: str = ""
    ) -> None:
        """/proposals, /skills, /synthesize, /reopen or /usage from someone who wrote to the bot."""
        texts = out.texts
        if not self.is_admin(chat.user_id):
            log.warning(
                "%s user %s tried /%s: not an admin", self.profile.who, chat.user_id, command
            )
            await out.notice(texts(NOT_ALLOWED))
            return
        if chat.is_group:
            await out.notice(texts(PRIVATE_ONLY))
            return
        if command == "proposals":
            await self._proposals(chat, out)
        elif command == "skills":
            await out.notice(await self.skills_text(texts))
        elif command == "reopen":
            await self._reopen(chat, args, out)
        elif command == "usage":
            report = await usage_report(
                self.store, self.prices, USAGE_DAYS, self.clock(), self.media_prices
            )
            await out.notice(usage_text(report, texts=texts))
        else:
            if self.profile.dialect.running_synthesis:
                await out.notice(texts(self.profile.dialect.running_synthesis))
            await out.notice(synthesis_text(await self.synthesis.run("chat"), texts))

    async def _reopen(self, chat: ChatRef, args: str, out: ReviewReplies) -> None:
        """`/reopen ID reason`: take back a rejection, recorded with this admin and the reason."""
        texts = out.texts
        number, _, reason = args.strip().partition(" ")
        number = number.lstrip("#")
        if not (number.isascii() and number.isdigit()) or int(number) < 1:
            await out.notice(texts(REOPEN_USAGE))
            return
        decider = f"{self.channel}:{chat.user_id}"
        try:
            decision = await self.review.reopen(int(number), decider, reason.strip()[:MAX_REASON])
        except REVIEW_ERRORS as exc:
            if refusal(exc).answer != "refused":
                await out.notice(refused_text(exc, int(number), texts))
                return
            p = await self.review.get(int(number))
            waits = p.status == "rejected"  # refused only because another one awaits review
            text = (
                texts(REOPEN_WAITS, id=p.id, slug=p.slug) if waits else texts(NOT_REJECTED, id=p.id)
            )
            await out.notice(text)
            return
        p = decision.proposal
        if decision.outcome != "reopened":
            await out.notice(texts(NOT_REJECTED, id=p.id))
        elif p.reopen_reason:
            await out.notice(texts(REOPENED_BECAUSE, id=p.id, slug=p.slug, reason=p.reopen_reason))
        else:
            await out.notice(texts(REOPENED, id=p.id, slug=p.slug))

    async def _proposals(self, chat: ChatRef, out: ReviewReplies) -> None:
        pending, texts = await self.store.pending_proposals(), out.texts
        if not pending:
            await out.notice(texts(NO_PENDING))
            return
        shown = pending[: out.cards_per_listing(len(pending))]
        more = more_pending(len(shown), len(pending), texts) if len(pending) > len(shown) else None
        ids = await out.show_cards([await self.card(p, texts) for p in shown], more)
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

    async def skills_text(self, texts: Texts = ENGLISH) -> str:
        return await skills_text(self.store, self.synthesis, texts)


def refused_text(exc: Exception, proposal_id: int, texts: Texts = ENGLISH) -> str:
    """What a chat admin is told when a review operation did nothing (per the review table).

    A refusal is said as the reviewer says it; /reopen and the repeat notice's button,
    the only chat operations that can be refused, say it in their own words instead.
    """
    answer = refusal(exc).answer
    if answer == "gone":
        return texts(GONE)
    if answer == "refused":
        return str(exc)
    log.exception("proposal #%d: the review operation failed", proposal_id)
    return texts(COULD_NOT_APPLY, id=proposal_id, error=exc)[:200]


async def skills_text(store: SkillListing, synthesis: Synthesis, texts: Texts = ENGLISH) -> str:
    """Every registered skill: source, status, and its measured effect on ratings."""
    pending = {p.slug: p.id for p in await store.pending_proposals()}
    effects = await synthesis.effects()
    return skills_overview(await store.skill_records(), effects, pending, texts)


def synthesis_text(summary: RunSummary, texts: Texts = ENGLISH) -> str:
    if summary.status == "busy":
        return texts(SYNTHESIS_BUSY)
    if summary.status == "failed":
        return texts(SYNTHESIS_FAILED, run=summary.run_id or "-", error=summary.error)
    done = texts.plural(
        SYNTHESIS_DONE,
        summary.sessions,
        run=summary.run_id,
        proposed=len(summary.proposed),
        suppressed=len(summary.suppressed),
        refused=len(summary.refused),
    )
    waiting = sum(p.status == "pending" for p in summary.proposed)
    return done + (texts(CARDS_GO_TO_ADMINS) if waiting else "")
