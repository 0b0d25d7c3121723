"""What a proposal card says, whatever the chat app: facts, evidence, a compact diff, the outcome.

Channels only format these pieces (Telegram HTML, a LINE Flex bubble, terminal
text) and add their buttons; what the card means is decided here once.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from gateway.core.records import SessionEvidence
from gateway.core.similarity import word_overlap
from gateway.core.tools import ToolInfo
from gateway.errors import SkillError
from gateway.i18n import ENGLISH, N_, Np_, Texts
from gateway.review.proposals import Proposal, SkillVersion
from gateway.review.trials import TRIAL, trial_lines
from gateway.skills.library import SKILL_FILE, parse_skill
from gateway.skills.live import LiveSkill
from gateway.skills.overview import SOURCES

Length = Callable[[str], int]

MAX_RATIONALE = 600
MAX_COMMENT = 140
MAX_COMMENTS = 3
COMPACT_CONTEXT = 1
"""Lines of context around each change in a card's diff (the full diff has 3)."""

UNKNOWN_TIME = N_("an unknown time")
SOMEONE = N_("someone")
WEB_CONSOLE = N_("the web console")
AUTOMATION = N_("automation")
TERMINAL_USER = N_("{who} (terminal)")
# TRANSLATORS: joins the parts of a card's evidence line ("3 sessions, 2 👎").
LIST_SEPARATOR = N_(", ")
SESSIONS = Np_("{n} session", "{n} sessions")
DOWN_ALL_COMMENTED = Np_("{n} 👎 with a comment", "{n} 👎 with comments")
DOWN = N_("{n} 👎")
SOME_COMMENTED = Np_("({n} with a comment)", "({n} with comments)")
UP = N_("{n} 👍")
FAILED_ANSWERS = Np_("{n} failed answer", "{n} failed answers")
TITLE_NEW = N_("Proposal #{id}: new skill {slug}")
TITLE_UPDATE = N_("Proposal #{id}: update of {slug}")
DESCRIPTION = N_("Description")
WHY = N_("Why")
EVIDENCE = N_("Evidence")
APPROVED_BY = N_("✅ Approved by {who} at {at}")
APPLIED_AT = N_("✅ Applied automatically at {at}")
REJECTED_BECAUSE = N_("❌ Rejected by {who}: {reason}")
REJECTED_AT = N_("❌ Rejected by {who} at {at}")
STALE_BECAUSE = N_("⚠️ Not applied ({who} at {at}): {reason}")
LIVE_SKILL_CHANGED = N_("the live skill changed")
ROLLED_BACK = N_("↩️ Rolled back by {who} at {at}")
ROLLED_BACK_BECAUSE = N_("↩️ Rolled back by {who} at {at}: {reason}")
WAITING = N_("⏳ Waiting for review")
TOOLS = N_("Tools")
IMPORTED_FROM = N_("📥 Imported from")
FILES = N_("Files beside it")
# TRANSLATORS: a file an imported skill carries: "scripts/run.sh (120 bytes)".
FILE_LINE = N_("{path} ({size} bytes)")
NEVER_RUN = N_("shown in the diff, never run by the gateway")
REPEAT_CHECK = N_("⚠️ A repeat?")
POSSIBLY_SAME = N_(
    "possibly the same as {known}; the model cannot judge this — decide yourself"
    " (nearest known claims: {nearest})"
)
TOOL_WARNING = N_("⚠️ Check before approving")
TOOL_ASKS = N_("{tool} asks the user first")
TOOL_ADMIN = N_("{tool} is for admins only")
TOOL_CHANGES = N_("{tool} changes things")
TOOL_MISSING = N_("{tool} is not available now")
DESTRUCTIVE = N_("⚠️ Destructive update")
# TRANSLATORS: {source} is where the skill came from ("bundled", "custom", "auto"), {n} the
# skill's line count: "removes 18 of 20 lines of the bundled skill writing-for-chat".
REMOVES_LINES = Np_(
    "removes {removed} of {n} line of the {source} skill {slug}",
    "removes {removed} of {n} lines of the {source} skill {slug}",
)
EMPTIES = N_("removes the whole body of the {source} skill {slug}")
OFF_TOPIC = Np_(
    "shares almost nothing with the {source} skill {slug} it replaces"
    " (removes {removed} of {n} line)",
    "shares almost nothing with the {source} skill {slug} it replaces"
    " (removes {removed} of {n} lines)",
)
OFF_TOPIC_BELOW = 0.15
"""An update "shares almost nothing" with the body it replaces when `word_overlap` (the share
of the shorter text's words that difflib matches, in order, in the other) is below this.
Measured on the bundled skills: another skill or an unrelated text (boiling eggs) overlaps
0.08 to 0.09, a short rewrite on the same topic 0.45 to 0.8, a small edit about 1.0."""
DIFF_TRIMMED = Np_(
    "… {n} more diff line not shown: tap Full diff.",
    "… {n} more diff lines not shown: tap Full diff.",
)


def when(ts: float | None, texts: Texts = ENGLISH) -> str:
    """A moment as people read it: "2026-05-01 12:34 UTC"."""
    if ts is None:
        return texts(UNKNOWN_TIME)
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M UTC")


def clip(text: str, limit: int) -> str:
    """One line of at most `limit` characters, ending in "…" when cut."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


class UserLabel(Protocol):
    """How a platform names its users on cards; its `PlatformSpec` is one."""

    @property
    def user_label(self) -> str:
        """A text marked `N_` with `{who}`, the user id."""
        ...

    @property
    def user_id_shown(self) -> int | None:
        """How much of the id it shows (None: all)."""
        ...


UserLabels = Mapping[str, UserLabel]
"""By platform name: the prefix of a chat admin's decider ("telegram:123")."""


def decider_label(
    decider: str | None,
    name: str | None = None,
    texts: Texts = ENGLISH,
    users: UserLabels | None = None,
) -> str:
    """Who decided, readable: a remembered name, else what the decider string says."""
    if name:
        return name
    if not decider:
        return texts(SOMEONE)
    kind, _, who = decider.partition(":")
    if decider == "web":
        return texts(WEB_CONSOLE)
    if decider == "auto":
        return texts(AUTOMATION)
    if kind == "cli" and who:
        return texts(TERMINAL_USER, who=who)
    platform = (users or {}).get(kind)
    if platform is not None and who:
        shown = platform.user_id_shown
        return texts(platform.user_label, who=who if shown is None else who[:shown])
    return decider


@dataclass(frozen=True)
class Evidence:
    """What a proposal is based on: its sessions and the feedback in them."""

    sessions: int
    up: int = 0
    down: int = 0
    commented: int = 0
    failed: int = 0
    comments: tuple[str, ...] = ()

    def summary(self, texts: Texts = ENGLISH) -> str:
        """E.g. "3 sessions, 2 👎 with comments, 1 👍, 1 failed answer"."""
        parts = [texts.plural(SESSIONS, self.sessions)]
        if self.down:
            if self.commented == self.down:
                parts.append(texts.plural(DOWN_ALL_COMMENTED, self.down))
            elif self.commented:
                some = texts.plural(SOME_COMMENTED, self.commented)
                parts.append(f"{texts(DOWN, n=self.down)} {some}")
            else:
                parts.append(texts(DOWN, n=self.down))
        if self.up:
            parts.append(texts(UP, n=self.up))
        if self.failed:
            parts.append(texts.plural(FAILED_ANSWERS, self.failed))
        return texts(LIST_SEPARATOR).join(parts)


def evidence_of(p: Proposal, sessions: Sequence[SessionEvidence]) -> Evidence:
    """Count the ratings, comments and failures in the sessions a proposal is based on."""
    up = down = commented = failed = 0
    negative: list[str] = []
    positive: list[str] = []
    for session in sessions:
        for turn in session.turns:
            failed += turn.failed
            for r in turn.ratings:
                if r.rating < 0:
                    down += 1
                    if r.comment and r.comment.strip():
                        commented += 1
                        negative.append(clip(r.comment, MAX_COMMENT))
                else:
                    up += 1
                    if r.comment and r.comment.strip():
                        positive.append(clip(r.comment, MAX_COMMENT))
    return Evidence(
        sessions=len(p.based_on) or len(sessions),
        up=up,
        down=down,
        commented=commented,
        failed=failed,
        comments=tuple([*negative, *positive][:MAX_COMMENTS]),
    )


@dataclass(frozen=True)
class Card:
    """One proposal as admins see it."""

    proposal: Proposal
    evidence: Evidence
    diff: str
    decided_by: str | None = None
    """The decider's readable name."""
    texts: Texts = ENGLISH
    """The language of the admin the card is for."""
    tools: tuple[tuple[str, ToolInfo | None], ...] = ()
    """Each tool the skill names, with its live policy (None: no such tool now)."""
    warning: UpdateWarning | None = None
    """Set when an update removes most of the skill it replaces or shares almost nothing with it."""

    @property
    def pending(self) -> bool:
        return self.proposal.status == "pending"

    @property
    def title(self) -> str:
        """E.g. "Proposal #3: new skill chat-brevity"."""
        p = self.proposal
        return self.texts(TITLE_NEW if p.kind == "create" else TITLE_UPDATE, id=p.id, slug=p.slug)

    def facts(self) -> list[tuple[str, str]]:
        """(label, text) lines under the title."""
        p, t = self.proposal, self.texts
        facts = [(t(DESTRUCTIVE), self.warning.line(t))] if self.warning is not None else []
        facts.append((t(DESCRIPTION), p.description))
        if p.rationale.strip():
            facts.append((t(WHY), clip(p.rationale, MAX_RATIONALE)))
        if p.origin is not None:  # from elsewhere: no evidence of this gateway's own
            facts.append((t(IMPORTED_FROM), p.origin))
        else:
            facts.append((t(EVIDENCE), self.evidence.summary(t)))
        if p.trial is not None:
            # What the trial before the card measured, or why it could not.
            facts.append((t(TRIAL), " — ".join(trial_lines(p.trial, t))))
        if p.files:
            files = t(LIST_SEPARATOR).join(
                t(FILE_LINE, path=path, size=len(text.encode("utf-8")))
                for path, text in p.files.items()
            )
            facts.append((t(FILES), f"{files}; {t(NEVER_RUN)}"))
        if p.possibly_same:
            nearest = t(LIST_SEPARATOR).join(p.possibly_same)
            facts.append(
                (t(REPEAT_CHECK), t(POSSIBLY_SAME, known=p.possibly_same[0], nearest=nearest))
            )
        if self.tools:
            facts.append((t(TOOLS), t(LIST_SEPARATOR).join(tool_line(n, i) for n, i in self.tools)))
            warnings = [w for n, i in self.tools for w in tool_warnings(n, i, t)]
            if warnings:
                facts.append((t(TOOL_WARNING), t(LIST_SEPARATOR).join(warnings)))
        return facts

    def outcome(self) -> str | None:
        """The decision as one line, or None while pending."""
        p, t = self.proposal, self.texts
        who = self.decided_by or decider_label(p.decided_by, texts=t)
        at = when(p.decided_at, t)
        if p.status == "approved":
            return t(APPROVED_BY, who=who, at=at)
        if p.status == "applied":
            return t(APPLIED_AT, at=at)
        if p.status == "rejected":
            if p.reason:
                return t(REJECTED_BECAUSE, who=who, reason=p.reason)
            return t(REJECTED_AT, who=who, at=at)
        if p.status == "stale":
            return t(STALE_BECAUSE, who=who, at=at, reason=p.reason or t(LIVE_SKILL_CHANGED))
        if p.status == "rolled_back":
            if p.reason:
                return t(ROLLED_BACK_BECAUSE, who=who, at=at, reason=p.reason)
            return t(ROLLED_BACK, who=who, at=at)
        return None

    def notice(self) -> str:
        """A short message about the decision, for chats whose card cannot be edited."""
        outcome = self.outcome() or self.texts(WAITING)
        return f"{self.title}\n{outcome}"

    def plain(self) -> str:
        """The card as plain text, without the diff."""
        lines = [self.title, *(f"{label}: {text}" for label, text in self.facts())]
        lines.extend(f"  “{c}”" for c in self.evidence.comments)
        lines.append(self.outcome() or self.texts(WAITING))
        return "\n".join(lines)


def tool_line(name: str, info: ToolInfo | None) -> str:
    return f"{name} ({info.policy})" if info is not None else f"{name} (—)"


def tool_warnings(name: str, info: ToolInfo | None, t: Texts = ENGLISH) -> list[str]:
    """What an admin should weigh about one tool a skill names."""
    if info is None:
        return [t(TOOL_MISSING, tool=name)]
    found = []
    if info.policy == "confirm":
        found.append(t(TOOL_ASKS, tool=name))
    elif info.policy == "admin":
        found.append(t(TOOL_ADMIN, tool=name))
    if not info.read_only:
        found.append(t(TOOL_CHANGES, tool=name))
    return found


WarningKind = Literal["empties", "removes", "off_topic"]


@dataclass(frozen=True)
class UpdateWarning:
    """Why an update needs a second look: it removes most of a skill, or replaces it with
    something else. `removed` of the replaced body's `of` non-blank lines are not kept."""

    kind: WarningKind
    removed: int
    of: int
    source: str
    """Where the replaced skill came from: bundled, custom or auto."""
    slug: str

    def line(self, texts: Texts = ENGLISH) -> str:
        """E.g. "removes 18 of 20 lines of the bundled skill writing-for-chat"."""
        source = texts(SOURCES[self.source]) if self.source in SOURCES else self.source
        if self.kind == "empties":
            return texts(EMPTIES, source=source, slug=self.slug)
        message = OFF_TOPIC if self.kind == "off_topic" else REMOVES_LINES
        return texts.plural(message, self.of, removed=self.removed, source=source, slug=self.slug)

    def as_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "removed": self.removed,
            "of": self.of,
            "source": self.source,
            "slug": self.slug,
        }


def update_warning(slug: str, source: str, old_body: str, new_body: str) -> UpdateWarning | None:
    """The warning an update from `old_body` to `new_body` carries, or None for an ordinary one.

    Lines are compared stripped, blank ones left out; a line the update rewrites counts as
    removed. It warns when the new body is empty, when it shares almost nothing with the old
    one (`OFF_TOPIC_BELOW`), or when half the old lines or more are gone.
    """
    old = [line.strip() for line in old_body.splitlines() if line.strip()]
    new = [line.strip() for line in new_body.splitlines() if line.strip()]
    if not old:
        return None
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    removed = len(old) - sum(block.size for block in matcher.get_matching_blocks())
    kind: WarningKind
    if not new:
        kind = "empties"
    elif word_overlap(old_body, new_body) < OFF_TOPIC_BELOW:
        kind = "off_topic"
    elif 2 * removed >= len(old):
        kind = "removes"
    else:
        return None
    return UpdateWarning(kind=kind, removed=removed, of=len(old), source=source, slug=slug)


def fit(text: str, budget: int, length: Length = len) -> tuple[str, int]:
    """Whole lines of `text` within `budget`; returns them and how many lines were left out.

    A first line longer than the budget is cut, so something is always shown.
    """
    lines = text.splitlines()
    kept: list[str] = []
    used = 0
    for line in lines:
        cost = length(line) + (1 if kept else 0)
        if used + cost > budget:
            break
        kept.append(line)
        used += cost
    if not kept and lines and budget > 1:
        return prefix(lines[0], budget - 1, length) + "…", len(lines) - 1
    return "\n".join(kept), len(lines) - len(kept)


def prefix(text: str, budget: int, length: Length = len) -> str:
    """The longest start of `text` whose length is within `budget`."""
    low, high = 0, len(text)
    while low < high:
        mid = (low + high + 1) // 2
        if length(text[:mid]) <= budget:
            low = mid
        else:
            high = mid - 1
    return text[:low]


def trimmed_note(dropped: int, texts: Texts = ENGLISH) -> str:
    """What a card says when its diff was cut to fit."""
    return texts.plural(DIFF_TRIMMED, dropped)


class CardReview(Protocol):
    """What building a card asks the review operations: the live skill, the staged diff,
    and how each platform names the admins who decide."""

    @property
    def users(self) -> UserLabels: ...

    async def live(self, slug: str) -> LiveSkill | None: ...

    async def diff(self, p: Proposal) -> str: ...

    def tool_directory(self) -> Mapping[str, ToolInfo]:
        """The live tools by name, with their policies (empty without tools)."""
        ...


class SessionEvidenceSource(Protocol):
    """The sessions a proposal was drafted from, with their ratings and comments."""

    async def session_evidence(self, session_ids: Sequence[int]) -> list[SessionEvidence]: ...


class ReviewerNames(Protocol):
    """How a decider was shown when they decided (a platform's display name)."""

    async def reviewer_name(self, decider: str) -> str | None: ...


class ReplacedVersions(Protocol):
    """The text a promoted update replaced, for its diff and a rollback."""

    async def replaced_version(self, proposal_id: int) -> SkillVersion | None: ...


class CardSource(SessionEvidenceSource, ReviewerNames, ReplacedVersions, Protocol):
    """What building a card reads from the store."""


def _reviewable(description: str, body: str, tools: Sequence[str] = ()) -> list[str]:
    """The lines of a skill a person reviews."""
    # The description decides when the skill is used, the tools what it may drive; the rest
    # of the frontmatter is the gateway's own provenance, not the proposal's content.
    uses = f"allowed-tools: {' '.join(tools)}\n" if tools else ""
    return f"description: {description}\n{uses}\n{body.strip()}\n".splitlines(keepends=True)


@dataclass(frozen=True)
class Base:
    """The skill a proposal changes, as it stood before: live while pending, else what its
    approval replaced (nothing for a create)."""

    lines: list[str]
    """Its reviewable lines, for the diff."""
    body: str | None = None
    """Its body, when it parses as a skill."""
    source: str = "custom"


async def base_of(p: Proposal, review: CardReview, source: ReplacedVersions) -> Base:
    """What the proposal changes, the same before and after the decision.

    Once approved, the live skill is the proposal itself, so the text it replaced is the base.
    """
    if p.status in ("approved", "applied", "rolled_back"):
        version = await source.replaced_version(p.id)
        if version is None:
            return Base([])
        try:
            old = parse_skill(version.content)
        except SkillError:
            return Base(version.content.splitlines(keepends=True))
        lines = _reviewable(old.description, old.body, old.allowed_tools)
        return Base(lines, old.body, old.source or "custom")
    live = await review.live(p.slug)
    if live is None:
        return Base([])
    skill = live.skill
    lines = _reviewable(skill.description, skill.body, skill.allowed_tools)
    return Base(lines, skill.body, live.source)


def diff_from(p: Proposal, base: Base, *, context: int = COMPACT_CONTEXT) -> str:
    """The proposal against `base`, without file headers (the card names the skill); an
    imported skill's files beside it follow, each under its path, whole."""
    after = _reviewable(p.description, p.content, p.allowed_tools)
    for path, text in p.files.items():
        after += [f"\n=== {path} ===\n", *text.splitlines(keepends=True)]
        if after[-1] and not after[-1].endswith("\n"):
            after[-1] += "\n"
    lines = difflib.unified_diff(
        base.lines, after, fromfile=f"{p.slug}/{SKILL_FILE}", tofile=f"proposal #{p.id}", n=context
    )
    return "".join(list(lines)[2:])


def warning_from(p: Proposal, base: Base) -> UpdateWarning | None:
    """The destructive or off-topic warning of an update against the skill it replaces."""
    if p.kind != "update" or base.body is None:
        return None
    return update_warning(p.slug, base.source, base.body, p.content)


async def warning_of(
    p: Proposal, review: CardReview, source: ReplacedVersions
) -> UpdateWarning | None:
    """`warning_from` for a page that builds no card (the console, the admin API)."""
    if p.kind != "update":
        return None
    return warning_from(p, await base_of(p, review, source))


async def change_diff(
    p: Proposal, review: CardReview, source: CardSource, *, context: int = COMPACT_CONTEXT
) -> str:
    """What the proposal changes in the skill, the same before and after the decision."""
    return diff_from(p, await base_of(p, review, source), context=context)


async def full_diff(p: Proposal, review: CardReview, source: CardSource) -> str:
    """The whole diff behind 🔍 Full diff: the staged file against the live one while pending."""
    if p.status == "pending":
        return await review.diff(p)
    return await change_diff(p, review, source, context=3)


async def build_card(
    p: Proposal, review: CardReview, source: CardSource, texts: Texts = ENGLISH
) -> Card:
    """The card of a proposal as it stands now, in the language of `texts`."""
    return await Cards(p, review, source).card(texts)


@dataclass(frozen=True)
class _Read:
    """What a card shows, read once for every language."""

    evidence: Evidence
    diff: str
    name: str | None
    """The decider's remembered name."""
    warning: UpdateWarning | None


class Cards:
    """One proposal's card in each language asked for: what it shows is read once."""

    def __init__(self, p: Proposal, review: CardReview, source: CardSource) -> None:
        self.proposal = p
        self.review = review
        self.source = source
        self._read: _Read | None = None
        self._made: dict[str, Card] = {}

    async def card(self, texts: Texts = ENGLISH) -> Card:
        """The card in the language of `texts`."""
        made = self._made.get(texts.language)
        if made is None:
            made = self._made[texts.language] = self._build(await self._facts(), texts)
        return made

    async def _facts(self) -> _Read:
        if self._read is None:
            p, source = self.proposal, self.source
            sessions = await source.session_evidence(p.based_on)
            name = await source.reviewer_name(p.decided_by) if p.decided_by else None
            base = await base_of(p, self.review, source)
            self._read = _Read(
                evidence_of(p, sessions), diff_from(p, base), name, warning_from(p, base)
            )
        return self._read

    def _build(self, facts: _Read, texts: Texts) -> Card:
        p, review = self.proposal, self.review
        evidence, diff, name = facts.evidence, facts.diff, facts.name
        live_tools = review.tool_directory()
        decided_by = (
            decider_label(p.decided_by, name, texts, review.users) if p.decided_by else None
        )
        return Card(
            tools=tuple((tool, live_tools.get(tool)) for tool in p.allowed_tools),
            proposal=p,
            evidence=evidence,
            diff=diff,
            decided_by=decided_by,
            texts=texts,
            warning=facts.warning,
        )
