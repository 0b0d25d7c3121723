"""The scripted model behind the fake OpenAI-compatible server: it answers and it synthesizes.

Chat: when the skill index in the system prompt lists skills that fit the
question, the first reply is one `load_skill` call per skill; the answer then
follows the bodies the tool returned (see `answers`). Synthesis (JSON mode):
it reads the 👎 comments in the fenced evidence, proposes the skill for each
preference asked for by at least `min_comments` of them and not yet enabled,
and, as models do, adds a seeded share of poor proposals: a vague or harmful
idea, a repeat of a rejected proposal (word for word or reworded), a copy of
a live skill. It skips what is enabled, but never holds back for the pending
and rejected proposals it is shown (it draws its repeats from the rejected
ones): keeping those out is the gateway's job.
"""

from __future__ import annotations

import json
import random
import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from eval.answers import Style, compose, relevant, style_of
from eval.corpus import BY_TEXT
from eval.skills import BAD, BAD_BY_NAME, GOOD, SkillDraft, topic_of
from eval.world import PREFERENCES
from gateway.skills.selection import INDEX_HEADER
from tests.fakes.openai_server import Scripted

# Each pass fences its evidence with a tag of its own: untrusted-chat-<12 hex digits>.
_FENCED = re.compile(
    r'<(untrusted-chat-[0-9a-f]{12}) session="(\d+)"[^>]*>\n(.*?)\n</\1>', re.DOTALL
)
_DOWN = re.compile(r'^  rating: 👎(?: comment: "(.*)")?$', re.MULTILINE)
_LISTED = re.compile(r"^- ([a-z0-9-]+)[: ]", re.MULTILINE)


@dataclass(frozen=True)
class Emitted:
    """One proposal the model made: in which synthesis call, why, and what."""

    call: int
    flavour: str
    """`evidence` (from comments), `new-bad`, `repeat` (of a rejection) or `duplicate`."""
    draft: SkillDraft


def _section(prompt: str, heading: str) -> str:
    """The text under a `## heading` of the synthesis prompt, up to the next heading."""
    start = prompt.find(f"## {heading}")
    if start < 0:
        return ""
    end = prompt.find("\n\n## ", start + 3)
    return prompt[start : end if end >= 0 else len(prompt)]


class ScriptedModel:
    """A deterministic stand-in for a language model (a responder for FakeOpenAI)."""

    def __init__(self, seed: int, *, bad_share: float = 0.5, min_comments: int = 2) -> None:
        self.rng = random.Random(f"{seed}:model")
        self.bad_share = bad_share
        self.min_comments = min_comments
        self.emitted: list[Emitted] = []
        self.synthesis_calls = 0
        self._tried: set[str] = set()

    def __call__(self, body: dict[str, Any]) -> Scripted | str:
        if (body.get("response_format") or {}).get("type") == "json_object":
            return self.synthesize(body["messages"])
        return self.chat(body["messages"])

    # ---- chat ------------------------------------------------------------------------------

    def chat(self, messages: list[dict[str, Any]]) -> Scripted | str:
        """A `load_skill` round first when skills fit, then the answer in their style."""
        last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
        question = str(messages[last_user]["content"])
        turn = messages[last_user + 1 :]
        if not any(m["role"] == "tool" for m in turn):
            wanted = [n for n, d in self._index(messages[0]["content"]) if relevant(question, d)]
            if wanted:
                return Scripted(tool_calls=[("load_skill", {"name": n}) for n in wanted])
        bodies = [
            str(m["content"])
            for m in turn
            if m["role"] == "tool" and not str(m["content"]).startswith("error:")
        ]
        known = BY_TEXT.get(question.strip())
        if known is None:
            return "I'm sorry, I don't know about that."
        return compose(known, style_of(bodies) if bodies else Style())

    @staticmethod
    def _index(system: str) -> list[tuple[str, str]]:
        """(name, description) of each skill in the system prompt's index."""
        start = system.find(INDEX_HEADER)
        if start < 0:
            return []
        entries = []
        for line in system[start + len(INDEX_HEADER) :].splitlines():
            if line.startswith("- ") and ": " in line:
                name, description = line[2:].split(": ", 1)
                entries.append((name.strip(), description.strip()))
        return entries

    # ---- synthesis -------------------------------------------------------------------------

    def synthesize(self, messages: list[dict[str, Any]]) -> str:
        """The proposals JSON for one batch of evidence."""
        self.synthesis_calls += 1
        prompt = str(messages[-1]["content"])
        enabled = set(_LISTED.findall(_section(prompt, "Enabled skills")))
        rejected = sorted(set(_LISTED.findall(_section(prompt, "Rejected proposals"))))
        asked: dict[str, list[int]] = defaultdict(list)
        sessions: list[int] = []
        for _tag, raw_id, text in _FENCED.findall(prompt):
            sessions.append(int(raw_id))
            for comment in _DOWN.findall(text):
                topic = topic_of(comment) if comment else None
                if topic is not None:
                    asked[topic].append(int(raw_id))
        made: list[tuple[str, SkillDraft, list[int], str]] = []
        order = sorted(asked, key=lambda t: (-len(asked[t]), list(PREFERENCES).index(t)))
        for topic in order:
            draft = GOOD[topic]
            if len(asked[topic]) >= self.min_comments and draft.name not in enabled:
                why = f"{len(asked[topic])} 👎 comments asked for this ({PREFERENCES[topic]})."
                made.append(("evidence", draft, sorted(set(asked[topic])), why))
        made.extend(self._poor_ideas(enabled, rejected, sessions))
        self.rng.shuffle(made)
        self.emitted.extend(Emitted(self.synthesis_calls, f, d) for f, d, _, _ in made)
        return json.dumps(
            {
                "proposals": [
                    {
                        "kind": "create",
                        "target": None,
                        "name": d.name,
                        "description": d.description,
                        "content": d.content,
                        "based_on": based_on,
                        "rationale": why,
                    }
                    for _, d, based_on, why in made
                ]
            },
            ensure_ascii=False,
        )

    def _poor_ideas(
        self, enabled: set[str], rejected: list[str], sessions: list[int]
    ) -> list[tuple[str, SkillDraft, list[int], str]]:
        """The seeded share of proposals a reviewer should not approve, or that repeat."""
        out: list[tuple[str, SkillDraft, list[int], str]] = []
        source = [self.rng.choice(sessions)] if sessions else []
        fresh = [b for b in BAD if b.draft.name not in self._tried]
        if fresh and self.rng.random() < self.bad_share:
            idea = self.rng.choice(fresh)
            self._tried.add(idea.draft.name)
            out.append(("new-bad", idea.draft, source, "Users seem unhappy with some answers."))
        known = [name for name in rejected if name in BAD_BY_NAME]
        if known and self.rng.random() < self.bad_share:
            idea = BAD_BY_NAME[self.rng.choice(known)]
            draft = self.rng.choice([idea.draft, idea.variant])
            out.append(("repeat", draft, source, "This would still help, in my view."))
        live = [d for d in GOOD.values() if d.name in enabled]
        if live and self.rng.random() < self.bad_share / 2:
            draft = self.rng.choice(live)
            out.append(("duplicate", draft, source, "Users keep asking for this."))
        return out
