"""Presses on a repeat notice's buttons: 🔍 the two wordings, or Reopen the rejection.

The same rules as card presses, in the same order: only the channel's admins, then only
data this bot signed, then only a notice item the database still has (a stale button
is refused). Reopen is the review operation the console and `/reopen` use, recorded as
the admin who pressed; a rejection reopened already says by whom and when.
"""

from __future__ import annotations

import logging

from gateway.conversation.models import Press, Profile
from gateway.conversation.ports import Decisions, RepeatItems, ReviewReplies
from gateway.conversation.review import (
    INVALID_BUTTON,
    NOT_ALLOWED,
    NOT_REJECTED,
    REOPEN_WAITS,
    REOPENED,
    refused_text,
)
from gateway.errors import ProposalNotFound
from gateway.i18n import N_, Texts
from gateway.review.answers import REVIEW_ERRORS, refusal
from gateway.review.cards import decider_label, when
from gateway.review.proposals import Proposal
from gateway.review.repeats import comparison, verify_repeat

log = logging.getLogger(__name__)

STALE_NOTICE = N_("This button is out of date: the notice it belongs to is gone.")
ALREADY_REOPENED = N_("Proposal #{id} was already reopened by {who} at {at}.")


class RepeatPresses:
    """🔍 and Reopen on the repeat notices of one channel's admins."""

    def __init__(self, profile: Profile, store: RepeatItems, review: Decisions) -> None:
        self.profile = profile
        self.store = store
        self.review = review

    async def on_press(self, press: Press, out: ReviewReplies) -> None:
        user, texts = press.chat.user_id, out.texts
        if user is None or not self.profile.audience.is_admin(user):
            log.warning(
                "%s user %s pressed a repeat notice button but is not an admin; nothing changed",
                self.profile.who,
                user,
            )
            await out.acknowledge(texts(NOT_ALLOWED))
            return
        verified = verify_repeat(self.profile.signer, press.data)
        if verified is None:
            log.warning("refused repeat notice data %r from %s", press.data[:80], self.profile.who)
            await out.acknowledge(texts(INVALID_BUTTON))
            return
        action, item_id = verified
        item = await self.store.repeat_notice_item(item_id)
        if item is None:
            await out.acknowledge(texts(STALE_NOTICE))
            return
        try:
            rejected = await self.review.get(item.proposal_id)
        except ProposalNotFound as exc:
            await out.acknowledge(refused_text(exc, item.proposal_id, texts))
            return
        if action == "compare":
            await out.acknowledge("", courtesy=True)
            await out.notice(comparison(item, rejected, texts), quote=True)
        else:
            decider = f"{self.channel}:{user}"
            name = await out.reviewer_name()
            if name:  # how the cards and the console name who reopened it
                await self.store.set_reviewer_name(decider, name)
            said = await self._reopen(rejected, decider, texts)
            await out.acknowledge(said, courtesy=True)  # a toast where the platform has one
            await out.notice(said)

    @property
    def channel(self) -> str:
        return self.profile.channel

    async def _reopen(self, p: Proposal, decider: str, texts: Texts) -> str:
        """Reopen as the console does; what to tell the admin who pressed."""
        try:
            decision = await self.review.reopen(p.id, decider)
        except REVIEW_ERRORS as exc:
            if refusal(exc).answer != "refused":
                return refused_text(exc, p.id, texts)
            p = await self.review.get(p.id)
            if p.status == "rejected":  # refused only because another one awaits review
                return texts(REOPEN_WAITS, id=p.id, slug=p.slug)
            return await self._already(p, texts)
        if decision.outcome != "reopened":
            return await self._already(decision.proposal, texts)
        return texts(REOPENED, id=p.id, slug=p.slug)

    async def _already(self, p: Proposal, texts: Texts) -> str:
        if p.reopened_by is None:
            return texts(NOT_REJECTED, id=p.id)
        name = await self.store.reviewer_name(p.reopened_by)
        who = decider_label(p.reopened_by, name, texts, self.review.users)
        return texts(ALREADY_REOPENED, id=p.id, who=who, at=when(p.reopened_at, texts))
