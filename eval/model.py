"""The scripted model behind the fake OpenAI-compatible server: it answers, synthesizes, compares.

Chat: when the skill index in the system prompt lists skills that fit the question,
the first reply is one `load_skill` call per skill; the answer then follows the
bodies the tool returned (see `answers`).

Synthesis (JSON mode) is generic: it reads the 👎 comments in the fenced evidence,
groups comments that share a content word, and for each group of at least
`min_comments` comments from different sessions writes a skill from those comments
(its name from the most common words, its body quoting what users said). It has no
list of answers to look up: what it proposes is only as good as the comments and
its grouping. Like real models it also makes poor proposals, each with a seeded
chance per batch: a vague or harmful idea of its own, a repeat of a rejected
proposal listed in its prompt, a copy of a live skill. With `paraphrase` it rewords
and renames every repeat and copy, as a model asked to "try again" does.

Close calls (the gateway's "is B the same instruction as A?") are answered by
reading both texts with the same instruction reader the answers use.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from eval.answers import Style, compose, relevant, style_of
from eval.corpus import BY_TEXT
from eval.skills import POOR, SkillDraft, paraphrase
from gateway.skills.selection import INDEX_HEADER
from gateway.synthesis import judge as same_claim
from tests.fakes.openai_server import Scripted, claims_asked, same_claim_answer

# Each pass fences its evidence with a tag of its own: untrusted-chat-<12 hex digits>.
_FENCED = re.compile(
    r'<(untrusted-chat-[0-9a-f]{12}) session="(\d+)"[^>]*>\n(.*?)\n</\1>', re.DOTALL
)
_DOWN = re.compile(r'^  rating: 👎(?: comment: "(.*)")?$', re.MULTILINE)
_LISTED = re.compile(r"^- ([a-z0-9-]+)[: ]", re.MULTILINE)
_WORD = re.compile(r"[a-z]+")
_STOP = frozenset(
    """a about all am an and answer answers any are as at be but by can could do does don for
    from get give given got have here how i i'd if in into is it its just like me more my no not
    of on one only or over please so than that the their them there these they thing think this
    to too use very want wanted was what when where which who why will with would you
    your""".split()
)


def words_of(text: str) -> list[str]:
    """The content words of a comment, crudely stemmed (a plural's s dropped)."""
    out = []
    for word in _WORD.findall(text.lower()):
        if word in _STOP or len(word) < 3:
            continue
        out.append(word[:-1] if word.endswith("s") and len(word) > 4 else word)
    return out


@dataclass(frozen=True)
class Emitted:
    """One proposal the model made: in which synthesis call, why, and what."""

    call: int
    flavour: str
    """`evidence` (from comments), `new-bad`, `repeat` (of a rejection) or `duplicate`."""
    draft: SkillDraft


@dataclass
class _Group:
    words: Counter[str] = field(default_factory=Counter)
    comments: list[tuple[int, str]] = field(default_factory=list)

    @property
    def sessions(self) -> list[int]:
        return sorted({sid for sid, _ in self.comments})


def group_comments(comments: list[tuple[int, str]]) -> list[_Group]:
    """Each comment joins the group it shares most content words with (or starts one)."""
    groups: list[_Group] = []
    for sid, comment in comments:
        # In the order written (not a set's): ties between words go the same way every run.
        found = list(dict.fromkeys(words_of(comment)))
        if not found:
            continue
        overlap = [(len(set(found) & set(g.words)), -n) for n, g in enumerate(groups)]
        best = max(overlap, default=(0, 0))
        home = groups[-best[1]] if best[0] > 0 else None
        if home is None:
            home = _Group()
            groups.append(home)
        home.words.update(found)
        home.comments.append((sid, comment))
    return groups


def draft_from(group: _Group) -> SkillDraft:
    """A skill written from a group of comments: named by its words, quoting its users."""
    common = [w for w, n in group.words.most_common() if n >= 2] or [
        w for w, _ in group.words.most_common(1)
    ]
    name = "-".join(common[:2]) + ("-answers" if len(common) < 2 else "")
    quoted = list(dict.fromkeys(c for _, c in group.comments))[:4]
    lines = "\n".join(f'- "{c}"' for c in quoted)
    title = " ".join(common[:2]).capitalize()
    return SkillDraft(
        name=name[:64].strip("-"),
        description=f"Use for every answer: what users asked about {' and '.join(common[:2])}.",
        content=f"# {title}\n\nUsers rated answers down and said:\n{lines}\n\n"
        f"In every answer, do what they asked: {quoted[0]}",
    )


def _section(prompt: str, heading: str) -> str:
    """The text under a `## heading` of the synthesis prompt, up to the next heading."""
    start = prompt.find(f"## {heading}")
    if start < 0:
        return ""
    end = prompt.find("\n\n## ", start + 3)
    return prompt[start : end if end >= 0 else len(prompt)]


class ScriptedModel:
    """A deterministic stand-in for a language model (a responder for FakeOpenAI)."""

    def __init__(
        self,
        seed: int,
        *,
        bad_share: float = 0.5,
        min_comments: int = 2,
        paraphrase: bool = False,
    ) -> None:
        self.rng = random.Random(f"{seed}:model")
        self.bad_share = bad_share
        self.min_comments = min_comments
        self.paraphrase = paraphrase
        self.emitted: list[Emitted] = []
        self.synthesis_calls = 0
        self.written: dict[str, SkillDraft] = {}
        """Every draft it wrote, by name: what it repeats later."""
        self.poor: dict[str, str] = {}
        """The name of each draft that is one of its poor ideas (`POOR`), or a repeat or copy
        of one, reworded or not: the poor idea's own name."""
        self._tried: set[str] = set()

    def __call__(self, body: dict[str, Any]) -> Scripted | str:
        messages = body["messages"]
        if messages[0]["content"] == same_claim.SYSTEM:
            return self.compare(body)
        if (body.get("response_format") or {}).get("type") in ("json_schema", "json_object"):
            return self.synthesize(messages)
        return self.chat(messages)

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

    # ---- is B the same as A? ---------------------------------------------------------------

    @staticmethod
    def compare(body: dict[str, Any]) -> str:
        """The first known claim that would make it answer the same way, when that is something."""
        known, new = claims_asked(body)
        style = style_of([new])
        kinds = re.findall(r"^\[\d+\] \((\w+)\)$", str(body["messages"][-1]["content"]), re.M)
        same = [
            i for i, text in enumerate(known, 1) if style != Style() and style_of([text]) == style
        ]
        if same:
            # Of several it repeats, the rejection says most: name that one.
            same.sort(key=lambda i: kinds[i - 1] != "rejected" if i <= len(kinds) else True)
            return same_claim_answer(same[0], "both ask for the same kind of answer")
        return same_claim_answer(0, "they ask for different things")

    # ---- synthesis -------------------------------------------------------------------------

    def synthesize(self, messages: list[dict[str, Any]]) -> str:
        """The proposals JSON for one batch of evidence."""
        self.synthesis_calls += 1
        prompt = str(messages[-1]["content"])
        enabled = set(_LISTED.findall(_section(prompt, "Enabled skills")))
        enabled_words = {w for n in enabled for w in words_of(n.replace("-", " "))}
        rejected = sorted(set(_LISTED.findall(_section(prompt, "Rejected proposals"))))
        comments: list[tuple[int, str]] = []
        sessions: list[int] = []
        for _tag, raw_id, text in _FENCED.findall(prompt):
            sessions.append(int(raw_id))
            comments.extend((int(raw_id), c) for c in _DOWN.findall(text) if c)
        made: list[tuple[str, SkillDraft, list[int], str]] = []
        for group in group_comments(comments):
            if len(group.sessions) < self.min_comments:
                continue
            draft = draft_from(group)
            if draft.name in enabled or set(words_of(draft.name.replace("-", " "))) <= (
                enabled_words
            ):
                continue  # it sees a skill for this already
            why = f"{len(group.comments)} 👎 comments say this."
            made.append(("evidence", draft, group.sessions, why))
        made.extend(self._poor_ideas(enabled, rejected, sessions))
        self.rng.shuffle(made)
        for flavour, draft, _, _ in made:
            self.emitted.append(Emitted(self.synthesis_calls, flavour, draft))
            self.written.setdefault(draft.name, draft)
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

    def _again(self, draft: SkillDraft) -> SkillDraft:
        """A draft as the model writes it a second time: as it was, or reworded and renamed."""
        again = paraphrase(draft, self.rng) if self.paraphrase else draft
        if draft.name in self.poor:
            self.poor.setdefault(again.name, self.poor[draft.name])
        return again

    def _poor_ideas(
        self, enabled: set[str], rejected: list[str], sessions: list[int]
    ) -> list[tuple[str, SkillDraft, list[int], str]]:
        """The seeded share of proposals a reviewer should not approve, or that repeat."""
        out: list[tuple[str, SkillDraft, list[int], str]] = []
        source = [self.rng.choice(sessions)] if sessions else []
        fresh = [d for d in POOR if d.name not in self._tried]
        if fresh and self.rng.random() < self.bad_share:
            idea = self.rng.choice(fresh)
            self._tried.add(idea.name)
            self.poor[idea.name] = idea.name
            out.append(("new-bad", idea, source, "Users seem unhappy with some answers."))
        known = [name for name in rejected if name in self.written]
        if known and self.rng.random() < self.bad_share:
            draft = self._again(self.written[self.rng.choice(known)])
            out.append(("repeat", draft, source, "This would still help, in my view."))
        live = [self.written[n] for n in sorted(enabled) if n in self.written]
        if live and self.rng.random() < (self.bad_share if self.paraphrase else self.bad_share / 2):
            draft = self._again(self.rng.choice(live))
            out.append(("duplicate", draft, source, "Users keep asking for this."))
        return out
