"""The synthesis prompt: rules and JSON contract, skills, open and refused proposals, evidence.

Everything here is bounded: the skill list by a token budget, target bodies by
count and length, pending and rejected proposals by count, evidence by the
batch limits.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from gateway.core.fence import TAG, fence_rule
from gateway.core.tools import ToolInfo
from gateway.review.proposals import Proposal, Rejection
from gateway.skills.catalog import SkillCatalog
from gateway.skills.selection import render_index
from gateway.synthesis.evidence import Batch

SKILL_LIST_TOKENS = 1500
MAX_TARGETS = 3
MAX_TARGET_CHARS = 4000
MAX_LISTED = 20
MAX_TOOLS = 60
_CONTRACT = (
    '{"proposals": [{"based_on": [<ids of the sessions it draws on>], "rationale": <one or '
    'two sentences for the reviewer: what the evidence shows>, "kind": "create" | "update", '
    '"target": <name of the skill an update changes, or null>, "name": <skill name>, '
    '"description": <when to use the skill>, "content": <markdown body, no frontmatter>, '
    '"statement": <the claim in one short English sentence>, "allowed_tools": [<names of '
    "the listed tools the skill tells the assistant to call; [] for none>]}]}"
)


def system_message(max_proposals: int, max_bytes: int, tag: str = TAG) -> str:
    """The rules the model works under."""
    return "\n".join(
        [
            "You improve the skills of a chat assistant. A skill is a markdown instruction "
            "file the assistant loads when the skill's description fits a request.",
            "You are shown finished conversations: what users asked, what the assistant "
            "answered, which skills it loaded, which answers failed, and how users rated "
            "answers (👍/👎, with comments). Propose new skills, or updates to existing ones, "
            "that would have made the rated-down or failed answers better or that capture "
            "what users rated up. Propose only what the evidence supports; an empty list is "
            "a good answer when it is thin.",
            "",
            "Rules:",
            f"- {fence_rule(tag)}",
            f"- At most {max_proposals} proposals.",
            '- Prefer "update" of an existing skill (target = its name, name = the same) '
            "to creating a near duplicate.",
            "- name: 1-64 characters of a-z, 0-9 and single hyphens. description: one or two "
            "sentences saying when to use the skill, at most 1024 characters. content: the "
            f"complete markdown body without frontmatter, at most {max_bytes} bytes.",
            "- Never put secrets, API keys, passwords, personal data or chat users' names "
            "into a skill.",
            "- Do not propose again what was rejected, and do not duplicate a proposal that "
            "waits for review.",
            "- based_on: the ids of the sessions the proposal draws on.",
            "- statement: what the skill asks of the assistant, in one short plain English "
            "sentence, whatever language the skill is written in (at most 300 characters).",
            "",
            "Answer with one JSON object and nothing else:",
            _CONTRACT,
        ]
    )


def likely_targets(batch: Batch, enabled: frozenset[str]) -> list[str]:
    """Enabled skills the batch's answers loaded, most loaded first."""
    counts = Counter(s for e in batch.sessions for s in e.skills_loaded() if s in enabled)
    return [name for name, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))][
        :MAX_TARGETS
    ]


def _query(batch: Batch) -> str:
    """What the batch is about, for choosing which skills to list."""
    words = []
    for evidence in batch.sessions:
        for turn in evidence.turns:
            if turn.role == "user":
                words.append(turn.text[:500])
            words.extend(r.comment or "" for r in turn.ratings)
    return " ".join(words)


def user_message(
    batch: Batch,
    catalog: SkillCatalog,
    pending: Sequence[Proposal],
    rejections: Sequence[Rejection],
    tools: Sequence[ToolInfo] = (),
) -> str:
    """Skills, the tools, open and rejected proposals, then the fenced evidence."""
    parts = ["## Enabled skills (name: when to use it)"]
    listed = render_index(catalog.index.select(_query(batch), SKILL_LIST_TOKENS))
    parts.append("\n".join(listed.splitlines()[1:]) if listed else "(none)")
    if tools:
        parts.append("## Tools the assistant can call (name: policy; a skill may tell it when)")
        parts.extend(
            f"- {t.name}: {t.policy}, {'read-only' if t.read_only else 'changes things'}"
            for t in tools[:MAX_TOOLS]
        )
    for name in likely_targets(batch, catalog.enabled):
        body = catalog.load(name)
        if body is not None:
            clipped = body if len(body) <= MAX_TARGET_CHARS else body[:MAX_TARGET_CHARS] + "\n…"
            parts.append(f"## Current body of `{name}` (loaded in these sessions)\n{clipped}")
    if pending:
        parts.append("## Proposals waiting for review (do not duplicate)")
        parts.extend(_line(p.kind, p.target, p.name, p.description) for p in pending[:MAX_LISTED])
    if rejections:
        parts.append("## Rejected proposals (do not propose these again)")
        for r in rejections[:MAX_LISTED]:
            why = f' — reason: "{r.reason}"' if r.reason else ""
            parts.append(_line(r.kind, r.target, r.name, r.description) + why)
    parts.append(f"## Evidence: {len(batch.sessions)} finished session(s)")
    parts.extend(batch.rendered)
    return "\n\n".join(parts)


def _line(kind: str, target: str | None, name: str, description: str) -> str:
    what = "new skill"
    if kind == "update" and target:
        what = f"update of {target}"
    elif kind == "retire":
        what = f"retirement of {target or name}: to be disabled"
    return f"- {name} ({what}): {' '.join(description.split())[:300]}"


def build_messages(
    batch: Batch,
    catalog: SkillCatalog,
    pending: Sequence[Proposal],
    rejections: Sequence[Rejection],
    *,
    max_proposals: int,
    max_bytes: int,
    tools: Sequence[ToolInfo] = (),
) -> list[dict[str, Any]]:
    """The chat-completions messages for one batch."""
    return [
        {"role": "system", "content": system_message(max_proposals, max_bytes, batch.tag)},
        {"role": "user", "content": user_message(batch, catalog, pending, rejections, tools)},
    ]
