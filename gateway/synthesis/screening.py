"""Every rule a proposal must pass, in code, before anything is staged.

A proposal that breaks a rule (name, description, size, secrets; for an imported skill, the
shape of a prompt injection) is refused; one
that repeats a rejection, a pending proposal or a live skill (under any name) is
suppressed, with what it matched and how (see `sameness`).
Neither reaches the disk. Sources are reduced to sessions the model was shown,
and a `create` of an existing name becomes an `update` of it. A new skill under a name a
pending proposal or a rejection already holds is not suppressed for it: it goes to the
same-claim check, and when it is a different claim it is renamed (`free_name`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from gateway.core.secrets import find_secret
from gateway.errors import SkillError
from gateway.review.proposals import Candidate, Claim, Proposal, Rejection
from gateway.skills.library import (
    MAX_NAME,
    content_hash,
    validate_description,
    validate_slug,
)
from gateway.skills.live import LiveSkill
from gateway.synthesis.answer import MAX_STATEMENT, ImportedDraft, ProposalDraft
from gateway.synthesis.sameness import Against, Decision, Known, SameClaim, SameClaimConfig
from gateway.synthesis.similarity import body_hash, change_text

_INJECTION = re.compile(
    r"\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+|the\s+|your\s+|every\s+)*"
    r"(?:previous|prior|above|earlier|preceding|system|original|other)\s+"
    r"(?:instructions?|prompts?|rules?|messages?|directions?|guidelines?)"
    r"|\b(?:reveal|print|show|repeat|output|leak|dump)\s+(?:me\s+)?(?:the\s+|your\s+)*"
    r"(?:system\s+prompt|hidden\s+(?:instructions?|prompt)|initial\s+instructions?)"
    r"|\byou\s+are\s+now\s+(?:in\s+)?(?:dan\b|developer\s+mode|jailbroken|unrestricted|"
    r"free\s+of\s+(?:all\s+)?(?:rules|restrictions))"
    r"|\b(?:do\s+not|don'?t|never)\s+(?:tell|inform|let)\s+(?:the\s+)?(?:user|admin|operator)s?"
    r"\s+(?:know\s+)?(?:about|that|what)"
    r"|<\|(?:im_start|im_end|system|endoftext)\|>|\[/?INST\]|<</?SYS>>"
    r"|</?\s*(?:system|untrusted-chat[\w-]*)\s*>",
    re.IGNORECASE,
)
"""The shapes of a prompt injection: orders to drop the instructions above, to reveal the
system prompt or to keep the user in the dark, a jailbreak persona, forged chat-template
tokens, a forged system or evidence-fence tag."""
_HIDDEN = {
    "\u200b": "a zero-width space",
    "\u200c": "a zero-width non-joiner",
    "\u200d": "a zero-width joiner",
    "\u2060": "a word joiner",
    "\ufeff": "a zero-width no-break space",
    **{chr(c): "a bidirectional override" for c in range(0x202A, 0x202F)},
    **{chr(c): "a bidirectional isolate" for c in range(0x2066, 0x206A)},
}
"""Characters that hide text from a reviewer's eyes while a model still reads it."""


def find_injection(texts: Iterable[str]) -> str | None:
    """What makes one of `texts` look like a prompt injection, or None.

    Text is read as the model would take it: NFKC-folded, so full-width or styled letters
    spell the same words; Unicode tag characters (invisible ASCII) count as hidden text.
    """
    for text in texts:
        for ch in text:
            if ch in _HIDDEN:
                return f"hidden text ({_HIDDEN[ch]}, U+{ord(ch):04X})"
            if 0xE0000 <= ord(ch) <= 0xE007F:
                return f"hidden text (a Unicode tag character, U+{ord(ch):04X})"
        folded = unicodedata.normalize("NFKC", text)
        found = _INJECTION.search(folded)
        if found:
            shown = " ".join(found.group(0).split())[:60]
            return f"the shape of a prompt injection ({shown!r})"
    return None


_FRONTMATTER = re.compile(r"\A\s*---[ \t]*\r?\n.*?\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)


@dataclass(frozen=True)
class Dropped:
    """A proposal that was not staged, and why; `suppressed` marks a repeat, not a broken rule."""

    name: str
    reason: str
    suppressed: bool
    matched: int | None = None
    """The earlier proposal a suppressed repeat matched, when there is one."""
    matched_skill: str | None = None
    """The live skill a suppressed repeat copies, when it is one."""
    detail: str | None = None
    """How the likeness was judged (the same text, word or embedding likeness, the model)."""
    against: Against | None = None
    """What a suppressed repeat repeats: a rejection, a pending proposal or a live skill."""


@dataclass
class ScreenContext:
    """What screening compares a proposal with."""

    shown: Sequence[int]
    live: Callable[[str], LiveSkill | None]
    pending: list[Proposal]
    rejections: Sequence[Rejection]
    threshold: float
    max_bytes: int
    secrets: Sequence[str]
    model: str | None
    now: float
    same: SameClaim = field(default_factory=lambda: SameClaim(SameClaimConfig()))
    live_skills: Sequence[Known] = ()
    """Every enabled skill, as a claim (see `live_claim`)."""
    tools: frozenset[str] = frozenset()
    """The names of the live tools: a proposal may name only these."""


def sources(based_on: Sequence[int | str], shown: Sequence[int]) -> list[int]:
    """Shown session ids among `based_on`; all shown ones when none is valid."""
    valid = set(shown)
    kept: list[int] = []
    for item in based_on:
        text = str(item).strip().lstrip("#")
        if text.isdigit() and int(text) in valid and int(text) not in kept:
            kept.append(int(text))
    return kept or list(shown)


def _body(content: str) -> str:
    """The markdown body, without a frontmatter block the model added anyway."""
    return _FRONTMATTER.sub("", content, count=1).strip()


def safe_label(name: str, secrets: Sequence[str]) -> str:
    """How a dropped proposal is named in a run: its name, unless the name holds a secret."""
    if find_secret([name], secrets):
        return "(name withheld: it contains a secret)"
    return name.strip()[:80] or "(unnamed)"


def screen(draft: ProposalDraft, ctx: ScreenContext) -> Candidate | Dropped:
    """A candidate ready to stage, or the reason it was dropped."""
    label = safe_label(draft.name, ctx.secrets)
    imported = draft if isinstance(draft, ImportedDraft) else None
    files = imported.files if imported is not None else {}
    texts: tuple[str, ...] = (
        draft.name,
        draft.target or "",
        draft.description,
        draft.content,
        draft.rationale,
        draft.statement,
    )
    if imported is not None:  # its origin is shown on the cards too
        texts = (*texts, imported.origin)
    found = find_secret((*texts, *files, *files.values()), ctx.secrets)
    if found:
        return Dropped(label, f"refused: it contains {found}", suppressed=False)
    # A skill from elsewhere was written for some other agent, by anyone: its text is held to
    # the shapes of an injection. A learned draft is the model's own words from fenced
    # evidence, reviewed as they are (docs/IMPORT.md).
    shape = find_injection((*texts, *files, *files.values())) if imported is not None else None
    if shape is not None:
        return Dropped(label, f"refused: it holds {shape}", suppressed=False)
    try:
        name = validate_slug(draft.name.strip())
        target = validate_slug(draft.target.strip()) if draft.target else None
        description = validate_description(draft.description)
    except SkillError as exc:
        return Dropped(label, str(exc), suppressed=False)
    tools = list(dict.fromkeys(t.strip() for t in draft.allowed_tools if t.strip()))
    unknown = [t for t in tools if t not in ctx.tools]
    if unknown:
        listed = ", ".join(safe_label(t, ctx.secrets) for t in unknown[:5])
        return Dropped(name, f"refused: it names a tool that does not exist ({listed})", False)
    body = _body(draft.content)
    if not body:
        return Dropped(name, "the skill body is empty", suppressed=False)
    size = len(body.encode("utf-8"))
    if size > ctx.max_bytes:
        return Dropped(name, f"body is {size} bytes, over the {ctx.max_bytes}-byte limit", False)

    kind = draft.kind
    live: LiveSkill | None = None
    if kind == "update":
        target = target or name
        live = ctx.live(target)
        if live is None and (live := ctx.live(name)) is not None:
            target = name
        if live is None:
            kind, target = "create", None  # nothing to update: the model meant a new skill
        else:
            name = target  # a folder is its name; renaming is not a proposal
    if kind == "create":
        live = ctx.live(name)
        if live is not None:
            kind, target = "update", name
    if kind == "create":
        target = None

    candidate = Candidate(
        kind=kind,
        target=target,
        name=name,
        description=description,
        content=body,
        content_hash=body_hash(body),
        change_text=change_text(live.skill.body if live else None, body),
        base_hash=content_hash(live.text) if live else None,
        based_on=sources(draft.based_on, ctx.shown),
        rationale=draft.rationale.strip(),
        model=ctx.model,
        generated_at=ctx.now,
        allowed_tools=tools,
        origin=imported.origin if imported is not None else None,
        files=dict(files),
        statement=" ".join(draft.statement.split())[:MAX_STATEMENT] or None,
    )
    return _unchanged(candidate, live) or candidate


def _unchanged(c: Candidate, live: LiveSkill | None) -> Dropped | None:
    """A proposal that would leave the live skill as it is."""
    if (
        live is not None
        and body_hash(live.skill.body) == c.content_hash
        and live.skill.description == c.description
        and live.skill.allowed_tools == c.allowed_tools
    ):
        return Dropped(
            c.name,
            "no change to the live skill",
            suppressed=True,
            matched_skill=c.name,
            detail="the same text, description and tools",
            against="live",
        )
    return None


def known_claims(ctx: ScreenContext, c: Candidate) -> list[Known]:
    """What `c` is compared with: rejections, pending proposals, for a new skill the live ones."""
    known = [
        Known("rejected", r, proposal_id=r.proposal_id, reason=r.reason)
        for r in ctx.rejections
        if r.kind != "retire"  # a retirement is the same claim only for the same live text
    ]
    known += [Known("pending", p, proposal_id=p.id) for p in ctx.pending if p.kind != "retire"]
    if c.kind == "create":  # an update may well bring its skill closer to another one
        known += [k for k in ctx.live_skills if k.skill != c.slug]
    return known


def waits_for(c: Candidate, ctx: ScreenContext) -> Proposal | None:
    """The pending proposal `c` must wait for: one staged file per skill, so an update of a
    skill (or anything for a skill to be retired) waits until the one staged is decided. A new
    skill under a pending one's name is checked like any other, and renamed if new."""
    for pending in ctx.pending:
        if pending.slug == c.slug and (c.kind != "create" or pending.kind == "retire"):
            return pending
    return None


async def repeat_of(c: Candidate, ctx: ScreenContext) -> tuple[Dropped | None, Decision | None]:
    """Why `c` repeats a rejection, a pending proposal or a live skill (or None), and the check.

    A decision `held` means the model could not be asked: `c` is neither staged nor dropped.
    """
    if (pending := waits_for(c, ctx)) is not None:
        dropped = Dropped(
            c.name,
            f"proposal #{pending.id} for {pending.slug} awaits review",
            suppressed=True,
            matched=pending.id,
            detail="the same skill",
            against="pending",
        )
        return dropped, None
    decision = await ctx.same.find(c, known_claims(ctx, c))
    if decision is None or decision.known is None:
        return None, decision
    k = decision.known
    if k.against == "rejected":
        ref = f" #{k.proposal_id}" if k.proposal_id else ""
        why = f": {k.reason}" if k.reason else ""
        reason = f"matches rejected proposal{ref}{why}"
    elif k.against == "pending":
        reason = f"repeats proposal #{k.proposal_id} ({k.claim.name}), which awaits review"
    else:
        reason = f"repeats the live skill {k.skill}"
    dropped = Dropped(
        c.name,
        reason,
        suppressed=True,
        matched=k.proposal_id,
        matched_skill=k.skill,
        detail=decision.detail,
        against=k.against,
    )
    return dropped, decision


def taken_by(c: Candidate, ctx: ScreenContext) -> str | None:
    """What holds the name of the new skill `c` already: a pending proposal or a rejection."""
    if c.kind != "create":
        return None
    for p in ctx.pending:
        if p.slug == c.name:
            return f"proposal #{p.id}, which awaits review"
    for r in ctx.rejections:
        if c.name in (r.name, r.target):
            return f"rejected proposal #{r.proposal_id}" if r.proposal_id else "a rejection"
    return None


def free_name(name: str, taken: Callable[[str], bool]) -> str:
    """The rename of a different claim under a taken name: `name-2`, `name-3`, ... the first
    that is not `taken`, the name shortened at a hyphen (or cut) to keep within 64 characters."""
    for n in range(2, 10_000):
        suffix = f"-{n}"
        base = name
        if len(base) + len(suffix) > MAX_NAME:
            base = base[: MAX_NAME - len(suffix)].rstrip("-")
        candidate = f"{base}{suffix}"
        if not taken(candidate):
            return candidate
    raise SkillError(f"no free name after {name!r}")


def renamed(c: Candidate, ctx: ScreenContext) -> tuple[Candidate, str | None]:
    """`c`, renamed when its name is taken (see `free_name`), and a line saying so."""
    holder = taken_by(c, ctx)
    if holder is None:
        return c, None
    names = {p.slug for p in ctx.pending}
    names.update(n for r in ctx.rejections for n in (r.name, r.target) if n)
    new = free_name(c.name, lambda n: n in names or ctx.live(n) is not None)
    return c.model_copy(update={"name": new}), f"renamed {c.name} -> {new}: {holder} holds the name"


def live_claim(name: str, description: str, body: str) -> Known:
    """A live skill as a claim, to catch a renamed copy of it."""
    claim = Claim(
        kind="create",
        name=name,
        description=description,
        content_hash=body_hash(body),
        change_text=change_text(None, body),
    )
    return Known("live", claim, skill=name)
