"""Review operations: stage, approve, reject, reopen, roll back; chat, web and CLI call these.

Every decision is claimed in the database first (a conditional update from
`pending`), so the first decision wins across processes; the file step
follows, then the registry. Whatever a crash interrupts, `reconcile` finishes
or undoes at start-up from the rows and the files. Deciders are strings such
as "telegram:123", "line:U…", "web", "web:alice" (a named admin) or "cli:alice".
"""

from __future__ import annotations

import difflib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from gateway.config import ReviewSettings
from gateway.core.events import Events
from gateway.core.records import SkillRecord
from gateway.core.tools import ToolDirectory, ToolInfo
from gateway.errors import (
    ProposalNotFound,
    ReopenRefused,
    RollbackRefused,
    SkillError,
    SkillNotFound,
)
from gateway.review.cards import UserLabels
from gateway.review.events import Change, ReviewEvent
from gateway.review.ports import ReviewStore
from gateway.review.proposals import PROPOSED_FILE, Candidate, Proposal, Rejection
from gateway.review.staging import Staging, render_proposal
from gateway.review.trials import TrialPair
from gateway.skills.library import SKILL_FILE, SkillLibrary, content_hash, parse_skill
from gateway.skills.live import LiveSkill, live_of

log = logging.getLogger(__name__)

Outcome = Literal["approved", "applied", "rejected", "stale", "rolled_back", "reopened", "decided"]
STALE_REASON = "the live skill changed after this proposal was made"
WITHDRAWN_REASON = (
    "withdrawn: a user whose conversation it was made from asked for their data to be deleted"
)
WITHDRAWN_TEXT = "[removed: made from a conversation whose user asked for their data to be deleted]"
"""What a withdrawn proposal's description and content become: the decision is kept, not the
words it was made of."""
EXPIRED_REASON = (
    "withdrawn: every conversation it was made from was deleted by retention"
    " (SKILLGATE_RETENTION_DAYS)"
)
EXPIRED_TEXT = "[removed: made from conversations deleted by retention]"
"""What the words of a proposal withdrawn by retention become."""
WITHDRAWER = "privacy"
"""Who a withdrawal is recorded as decided by."""
RETIRED = "retired"


@dataclass(frozen=True)
class Decision:
    """What a review operation did; `decided` means someone else had decided first."""

    outcome: Outcome
    proposal: Proposal


class Reviewer:
    """Review state over the skill library and the store."""

    def __init__(
        self,
        library: SkillLibrary,
        store: ReviewStore,
        *,
        settings: ReviewSettings | None = None,
        events: Events | None = None,
        clock: Callable[[], float] = time.time,
        users: UserLabels | None = None,
    ) -> None:
        self.library = library
        self.staging = Staging(library)
        self.store = store
        self.settings = settings or ReviewSettings()
        """Whether automation's proposals wait for an admin (SKILLGATE_REQUIRE_APPROVAL)."""
        self.events = events or Events()
        """Told every `ReviewEvent`, once per operation, where the operation raises it; what
        follows (the skill index, the log, the cards) never undoes the durable decision."""
        self.clock = clock
        self.users: UserLabels = users or {}
        """How each platform names the admins who decide, for cards and listings."""
        self.tools: ToolDirectory | None = None
        """The live tools, for the policies a card shows (None: no tools)."""

    def tool_directory(self) -> dict[str, ToolInfo]:
        """The live tools by name, with their policies."""
        return {t.name: t for t in self.tools.directory()} if self.tools is not None else {}

    async def get(self, proposal_id: int) -> Proposal:
        proposal = await self.store.get_proposal(proposal_id)
        if proposal is None:
            raise ProposalNotFound(f"no proposal #{proposal_id}")
        return proposal

    async def live(self, slug: str) -> LiveSkill | None:
        """The live skill and its source (registry first), or None; the file is read once."""
        text = self.staging.live_text(slug)
        if text is None:
            return None
        record = await self.store.get_skill_record(slug)
        return live_of(text, slug, record.source if record else None)

    def needs_review(self, proposal: Proposal, live: LiveSkill | None) -> bool:
        """Approval off lets automation change (or retire) only what automation wrote."""
        if self.settings.require_approval or proposal.origin is not None:
            return True  # a skill from elsewhere is never live before an admin approves it
        return proposal.kind != "create" and (live is None or live.source != "auto")

    async def submit(
        self, candidate: Candidate, run_id: int | None = None, pairs: Sequence[TrialPair] = ()
    ) -> Proposal:
        """Store and stage a proposal, with its trial's `pairs`; apply it at once when the
        policy allows."""
        p = await self.store.add_proposal(candidate, run_id, pairs)
        live = await self.live(p.slug) if p.kind != "create" else None
        try:
            await self.restage(p, live)
        except (OSError, SkillError) as exc:
            # A full disk, say: no row may wait for review without its staged file.
            self._discard(p)
            await self.store.drop_proposal(p.id)
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise SkillError(f"could not stage the proposal for {p.slug}: {why}") from exc
        if not self.needs_review(p, live):
            record = await self.store.get_skill_record(p.slug)
            return (await self._approve(p, record, "auto", "applied")).proposal
        await self.events.publish(ReviewEvent("staged", p))
        return p

    async def approve(self, proposal_id: int, decider: str, *, name: str | None = None) -> Decision:
        """Promote the staged file over the live one, if the live one is what it was based on.

        `name`: how the decider is shown on cards, kept with the decision.
        """
        found = await self.store.proposal_and_skill(proposal_id)
        if found is None:
            raise ProposalNotFound(f"no proposal #{proposal_id}")
        return await self._approve(*found, decider, "approved", name)

    async def _approve(
        self,
        p: Proposal,
        record: SkillRecord | None,
        decider: str,
        status: Literal["approved", "applied"],
        name: str | None = None,
    ) -> Decision:
        """The decision claimed, the files promoted, the registry updated: three round trips
        and one read of the live file, whatever the proposal's kind."""
        if p.status != "pending":
            return Decision("decided", p)
        now = self.clock()
        text = self.staging.live_text(p.slug)
        live = None if text is None else live_of(text, p.slug, record.source if record else None)
        if based_on_other(p, text):
            stale = await self.store.transition(
                p.id,
                from_status="pending",
                to_status="stale",
                by=decider,
                at=now,
                reason=STALE_REASON,
                name=name,
            )
            if stale is None:
                return Decision("decided", await self.get(p.id))
            self._discard(p)
            return await self._decided("stale", stale)
        claimed = await self.store.transition(
            p.id, from_status="pending", to_status=status, by=decider, at=now, name=name
        )
        if claimed is None:
            return Decision("decided", await self.get(p.id))
        try:
            change = await self.promote(claimed, live, record)
        except (OSError, SkillError):
            # The files did not change: give the decision back rather than claim a promotion.
            await self.store.transition(
                p.id, from_status=status, to_status="pending", by=None, at=None
            )
            raise
        return await self._decided(status, claimed, change)

    async def restage(self, p: Proposal, live: LiveSkill | None = None) -> None:
        """Write the staged file of a pending proposal from its row (a retirement has none)."""
        if p.kind == "retire":
            return
        if live is None and p.kind == "update":
            live = await self.live(p.slug)
        self.staging.stage(
            p.slug, render_proposal(p, live.skill if live else None, _source(p, live))
        )

    async def promote(
        self, p: Proposal, live: LiveSkill | None, record: SkillRecord | None
    ) -> Change:
        """Keep the replaced text, rename the staged file over the live one, update the registry.

        `record`: the skill's registry row as read with the proposal (None: it has none).
        """
        now = self.clock()
        if p.kind == "retire":
            return await self._retire(p, live, record, now)
        source = _source(p, live)
        text = render_proposal(p, live.skill if live else None, source)
        for path, content in p.files.items():  # written, never run; the skill text last
            self.library.write_file(p.slug, path, content)
        self.staging.promote(p.slug, text)
        replaced = (live.text, content_hash(live.text)) if live is not None else None
        skill = await self.register(p, text, source, p.status, now, record, replaced=replaced)
        return Change(skill, text)

    async def register(
        self,
        p: Proposal,
        text: str,
        source: str,
        review: str,
        now: float,
        record: SkillRecord | None,
        *,
        replaced: tuple[str, str] | None = None,
    ) -> SkillRecord:
        """The registry row of a promoted text (`record`: the skill's row before, if any),
        with the text it replaced and that text's hash."""
        skill = SkillRecord(
            slug=p.slug,
            source=source,
            enabled=True,
            review_status=review,
            content_hash=content_hash(text),
            created_at=record.created_at if record else now,
            updated_at=now,
        )
        await self.store.mark_promoted(p.id, now, skill, replaced=replaced)
        return skill

    async def _retire(
        self, p: Proposal, live: LiveSkill | None, record: SkillRecord | None, now: float
    ) -> Change:
        """Disable the skill and keep its files: it is no longer offered or loadable."""
        if record is None:
            text = live.text if live else ""
            record = SkillRecord(
                slug=p.slug,
                source=live.source if live else "custom",
                content_hash=content_hash(text),
                created_at=now,
                updated_at=now,
            )
        update = {"enabled": False, "review_status": RETIRED, "updated_at": now}
        skill = record.model_copy(update=update)
        await self.store.mark_promoted(p.id, now, skill)
        return Change(skill)

    async def reject(
        self,
        proposal_id: int,
        decider: str,
        reason: str | None = None,
        *,
        name: str | None = None,
    ) -> Decision:
        """Refuse a proposal for good: a tombstone, and the staged file gone."""
        p = await self.get(proposal_id)
        if p.status != "pending":
            return Decision("decided", p)
        now = self.clock()
        reason = (reason or "").strip() or None
        rejected = await self.store.transition(
            p.id,
            from_status="pending",
            to_status="rejected",
            by=decider,
            at=now,
            reason=reason,
            tombstone=_tombstone(p, decider, now, reason),
            name=name,
        )
        if rejected is None:
            return Decision("decided", await self.get(p.id))
        self._discard(p)
        return await self._decided("rejected", rejected)

    async def withdraw_evidence(self, session_ids: Sequence[int]) -> list[int]:
        """Withdraw the pending proposals made from these sessions, just deleted at a user's
        request (/forget): marked stale with the reason, their words replaced by
        WITHDRAWN_TEXT (in repeat notices too) and their trial's pairs deleted, their staged
        files removed, their cards updated. Decided ones and live skills keep their text:
        that is their provenance (docs/SECURITY.md)."""
        gone = set(session_ids)
        pending = await self.store.pending_proposals()
        found = [p for p in pending if gone.intersection(p.based_on)]
        return await self._withdraw(found, WITHDRAWN_REASON, WITHDRAWN_TEXT)

    async def withdraw_orphans(self) -> list[int]:
        """Withdraw, as `withdraw_evidence` does, the pending proposals whose evidence is gone:
        one made from a session deleted at a user's request (a withdrawal a crash cut short),
        and one every session of which retention deleted (SKILLGATE_RETENTION_DAYS), whose
        words would otherwise outlive all it was made from until an admin decided it.
        Proposals made from no session (imported ones) are not touched."""
        pending = [p for p in await self.store.pending_proposals() if p.based_on]
        if not pending:
            return []
        deleted = await self.store.deleted_sessions(
            sorted({s for p in pending for s in p.based_on})
        )
        forgotten, expired = [], []
        for p in pending:
            reasons = {deleted[s].reason for s in p.based_on if s in deleted}
            if "forget" in reasons:
                forgotten.append(p)
            elif all(s in deleted for s in p.based_on):
                expired.append(p)
        return [
            *await self._withdraw(forgotten, WITHDRAWN_REASON, WITHDRAWN_TEXT),
            *await self._withdraw(expired, EXPIRED_REASON, EXPIRED_TEXT),
        ]

    async def _withdraw(self, found: Sequence[Proposal], reason: str, text: str) -> list[int]:
        withdrawn = []
        for p in found:
            if not await self.store.transition(
                p.id,
                from_status="pending",
                to_status="stale",
                by=WITHDRAWER,
                at=self.clock(),
                reason=reason,
                redacted=text,
            ):
                continue  # decided meanwhile
            self._discard(p)
            await self._decided("stale", await self.get(p.id))
            withdrawn.append(p.id)
        return withdrawn

    def _discard(self, p: Proposal) -> None:
        if p.kind != "retire":  # a retirement owns no staged file
            self.staging.discard(p.slug)

    async def give_reason(self, proposal_id: int, reason: str | None) -> Proposal:
        """Set (or clear) the reason of a rejection after the fact; the tombstone keeps it too.

        Chat admins reject with one tap and are asked for the reason afterwards; the
        rejection itself, and so the first decision, was already recorded.
        """
        p = await self.get(proposal_id)
        reason = (reason or "").strip() or None
        if p.status != "rejected" or p.reason == reason:
            return p
        if not await self.store.set_rejection_reason(p.id, reason):
            return await self.get(p.id)
        p = await self.get(p.id)
        await self.events.publish(ReviewEvent("decided", p))
        return p

    async def reopen(self, proposal_id: int, decider: str, reason: str | None = None) -> Decision:
        """Take back a rejection: the proposal waits for review again, its tombstone stands down.

        Recorded with who and why. The staged file is written again from the row; an
        update whose skill changed since is found stale when someone approves it.
        """
        p = await self.get(proposal_id)
        if p.status != "rejected":
            raise ReopenRefused(f"proposal #{p.id} is {p.status.replace('_', ' ')}, not rejected")
        for other in await self.store.pending_proposals():
            if other.slug == p.slug:  # one staged file per skill: decide that one first
                raise ReopenRefused(f"proposal #{other.id} for {p.slug} awaits review")
        reason = (reason or "").strip() or None
        if not await self.store.reopen_proposal(p.id, decider, self.clock(), reason):
            return Decision("decided", await self.get(p.id))
        p = await self.get(p.id)
        await self.restage(p)
        log.info("proposal #%d (%s) reopened by %s", p.id, p.slug, decider)
        return await self._decided("reopened", p)

    async def rollback(self, proposal_id: int, decider: str, reason: str | None = None) -> Decision:
        """Undo an approved update (its old text back) or retirement (enabled again).

        The undone proposal is remembered as refused, so it is not proposed again.
        """
        p = await self.get(proposal_id)
        if p.kind == "retire" and p.status in ("approved", "applied"):
            return await self._reinstate(p, decider, reason)
        if p.kind != "update" or p.status not in ("approved", "applied"):
            raise RollbackRefused(
                f"proposal #{p.id} is not an approved update or retirement ({p.status})"
            )
        version = await self.store.replaced_version(p.id)
        if version is None or live_proposal(self.staging.live_text(p.slug)) != p.id:
            raise RollbackRefused(f"{p.slug} changed after proposal #{p.id} was approved")
        now = self.clock()
        rolled_back = await self._mark_rolled_back(p, decider, reason, now)
        if rolled_back is None:
            return Decision("decided", await self.get(p.id))
        change = await self.restore(rolled_back, version.content, now)
        return await self._decided("rolled_back", rolled_back, change)

    async def _mark_rolled_back(
        self,
        p: Proposal,
        decider: str,
        reason: str | None,
        now: float,
        record: SkillRecord | None = None,
    ) -> Proposal | None:
        """Record the rollback with its tombstone (and registry row); None if someone was first."""
        reason = (reason or "").strip() or "rolled back"
        return await self.store.transition(
            p.id,
            from_status=p.status,
            to_status="rolled_back",
            by=decider,
            at=now,
            reason=reason,
            tombstone=_tombstone(p, decider, now, reason),
            record=record,
        )

    async def restore(self, p: Proposal, text: str, now: float) -> Change:
        """Write back the text an update replaced, and its registry row."""
        self.library.write_text(p.slug, text)
        record = await self.store.get_skill_record(p.slug)
        if record is None:
            return Change(None, text)
        skill = record.model_copy(
            update={
                "content_hash": content_hash(text),
                "review_status": "rolled_back",
                "updated_at": now,
            }
        )
        await self.store.mark_promoted(p.id, now, skill)
        return Change(skill, text)

    async def _reinstate(self, p: Proposal, decider: str, reason: str | None) -> Decision:
        """Enable a retired skill again, in the same transaction as the rollback."""
        record = await self.store.get_skill_record(p.slug)
        if record is None or record.enabled or record.review_status != RETIRED:
            raise RollbackRefused(f"{p.slug} is not retired any more")
        now = self.clock()
        update = {"enabled": True, "review_status": "rolled_back", "updated_at": now}
        skill = record.model_copy(update=update)
        rolled_back = await self._mark_rolled_back(p, decider, reason, now, record=skill)
        if rolled_back is None:
            return Decision("decided", await self.get(p.id))
        return await self._decided("rolled_back", rolled_back, Change(skill))

    async def switch(
        self, slug: str, enabled: bool, decider: str, reason: str | None = None
    ) -> SkillRecord:
        """Turn a registered skill off or on by hand, recording who and why.

        Only the registry row changes: the skill's files, a custom skill's above
        all, stay exactly as they are, and a later switch undoes this one.
        """
        reason = (reason or "").strip() or None
        record = await self.store.switch_skill(slug, enabled, decider, reason, self.clock())
        if record is None:
            raise SkillNotFound(f"no registered skill {slug}")
        log.info("skill %s %s by %s", slug, "enabled" if enabled else "disabled", decider)
        await self.events.publish(ReviewEvent("switched", skill=record))
        return record

    async def proposed_text(self, p: Proposal) -> str:
        """The SKILL.md text the proposal makes: the staged file while it is pending."""
        if p.kind == "retire":
            return self.staging.live_text(p.slug) or ""  # a retirement changes no text
        proposed = self.staging.staged_text(p.slug) if p.status == "pending" else None
        if proposed is None:
            live = await self.live(p.slug) if p.kind == "update" else None
            proposed = render_proposal(p, live.skill if live else None, _source(p, live))
        return proposed

    async def diff(self, p: Proposal) -> str:
        """Unified diff from the live SKILL.md to the proposed one, or what a retirement does."""
        if p.kind == "retire":
            return (
                f"retire {p.slug}: the skill is disabled, so it is no longer offered or loaded;"
                f" its files stay in {p.slug}/ and a rollback enables it again.\n"
            )
        proposed = await self.proposed_text(p)
        out = "".join(
            difflib.unified_diff(
                (self.staging.live_text(p.slug) or "").splitlines(keepends=True),
                proposed.splitlines(keepends=True),
                fromfile=f"{p.slug}/{SKILL_FILE}",
                tofile=f"{p.slug}/{PROPOSED_FILE}",
            )
        )
        beside = self.library.files_beside(p.slug) if p.files else {}
        for path, text in p.files.items():  # an imported skill's files: shown, never run
            out += "".join(
                difflib.unified_diff(
                    beside.get(path, "").splitlines(keepends=True),
                    text.splitlines(keepends=True),
                    fromfile=f"{p.slug}/{path}",
                    tofile=f"{p.slug}/{path} (proposed)",
                )
            )
        return out

    async def _decided(
        self, outcome: Outcome, p: Proposal, change: Change | None = None
    ) -> Decision:
        skill, text = (change.skill, change.text) if change is not None else (None, None)
        await self.events.publish(ReviewEvent("decided", p, skill, text))
        return Decision(outcome, p)


def _source(p: Proposal, live: LiveSkill | None) -> str:
    """Automation's own skills are `auto`, skills from elsewhere `imported`; an update the
    gateway learned keeps its target's source."""
    if p.origin is not None:
        return "imported"
    return live.source if (p.kind == "update" and live is not None) else "auto"


def based_on_other(p: Proposal, live_text: str | None) -> bool:
    """True when the live file is no longer what the proposal was made against."""
    if p.kind == "create":
        return live_text is not None
    return live_text is None or content_hash(live_text) != p.base_hash


def live_proposal(text: str | None) -> int | None:
    """The proposal id recorded in a skill file's frontmatter."""
    if text is None or "proposal:" not in text:
        return None  # most skills never were a proposal: skip parsing them
    try:
        value = parse_skill(text).metadata.get("proposal")
    except SkillError:
        return None
    return value if isinstance(value, int) else None


def _tombstone(p: Proposal, decider: str, now: float, reason: str | None) -> Rejection:
    return Rejection(
        proposal_id=p.id,
        kind=p.kind,
        target=p.target,
        name=p.name,
        description=p.description,
        content_hash=p.content_hash,
        change_text=p.change_text,
        statement=p.statement,
        reason=reason,
        decided_by=decider,
        rejected_at=now,
    )
