"""Retirement proposals: an enabled skill reliably rated worse than answers without it.

A retirement goes through the same review as any proposal. It stages no file:
approving it disables the skill (its files stay), rolling it back enables it
again. Its claim is the skill's name with the hash of its live file, so a
refused or rolled-back retirement is not proposed again until the text changes, or
until the evidence against the skill (👎 on answers that loaded it) has doubled since:
a person may have refused it on too little.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from gateway.review.proposals import Candidate, Proposal, Rejection
from gateway.review.reviewer import Reviewer
from gateway.skills.effect import EffectThresholds, SkillEffect, Tally, harmful
from gateway.skills.library import SkillLibrary, content_hash
from gateway.skills.live import LiveSkill, load_live
from gateway.skills.looks import boundary, share, z_score
from gateway.synthesis.ports import RetireStore
from gateway.synthesis.screening import Dropped


def retire_hash(name: str, live_text: str) -> str:
    """The claim hash of retiring `name` as it is now."""
    return hashlib.sha256(f"retire\n{name}\n{content_hash(live_text)}".encode()).hexdigest()


AGAINST = "evidence against: "


def against(effect: SkillEffect) -> int:
    """The evidence against a skill: 👎 on the rated answers that loaded it."""
    return effect.loaded.rated - effect.loaded.up


def _against(change_text: str) -> int | None:
    """The evidence against recorded with a retirement, when it was."""
    text = change_text.removeprefix(AGAINST)
    return int(text) if change_text.startswith(AGAINST) and text.isdigit() else None


def _share(t: Tally, z: float) -> str:
    low, high = t.interval(z)
    rate = t.rate or 0.0
    return (
        f"{t.up} of {t.rated} ({round(rate * 100)}%, 95% interval "
        f"{round(low * 100)}-{round(high * 100)}%)"
    )


def rationale(effect: SkillEffect, thresholds: EffectThresholds) -> str:
    """The figures behind a retirement, in words, for the reviewer."""
    z, alpha = thresholds.z, thresholds.alpha
    points = round(-(effect.difference or 0.0) * 100)
    low = round(-(effect.difference_high or 0.0) * 100)
    high = round(-(effect.difference_low or 0.0) * 100)
    margin = round(thresholds.margin * 100)
    look = max(effect.looked, 0)
    return (
        f"Answers that loaded {effect.name} were rated 👍 {_share(effect.loaded, z)}; "
        f"comparable answers without it {_share(effect.without, z)}. That is {points} points "
        f"worse (95% interval {low}-{high}, which reaches the {margin}-point margin), with at "
        f"least {thresholds.min_evidence} rated answers on each side. At look {look + 1} of "
        f"the sequential test, tuned to harms of {margin} points, the difference was "
        f"{z_score(effect.loaded, effect.without):.1f} standard errors, past the "
        f"{boundary(look, alpha):.2f} of that look, which spends {share(look) * alpha:.2%} "
        f"of the {alpha:.0%} bound on false alarms (the looks together spend no more, "
        "however often it is checked). "
        "Retiring disables the skill; its files are kept and a rollback enables it again."
    )


def retire_candidate(
    live: LiveSkill,
    effect: SkillEffect,
    thresholds: EffectThresholds,
    sources: Sequence[int],
    now: float,
) -> Candidate:
    """A retirement of the live skill, carrying its figures."""
    name = live.skill.name
    return Candidate(
        kind="retire",
        target=name,
        name=name,
        description=live.skill.description,
        content=live.skill.body,
        content_hash=retire_hash(name, live.text),
        change_text=f"{AGAINST}{against(effect)}",  # kept with a refusal: see `repeat`
        base_hash=content_hash(live.text),
        based_on=list(sources),
        rationale=rationale(effect, thresholds),
        model=None,
        generated_at=now,
    )


def repeat(
    c: Candidate, pending: Sequence[Proposal], rejections: Sequence[Rejection]
) -> Dropped | None:
    """Why a retirement repeats a refused one or collides with an open proposal, or None."""
    now = _against(c.change_text) or 0
    for r in rejections:
        then = _against(r.change_text)
        if then is not None and now >= 2 * max(then, 1):
            continue  # twice the evidence it was refused on: the reviewer is asked again
        if r.kind == "retire" and r.content_hash == c.content_hash:
            ref = f" #{r.proposal_id}" if r.proposal_id else ""
            why = f": {r.reason}" if r.reason else ""
            return Dropped(
                c.name, f"matches refused retirement{ref}{why}", True, matched=r.proposal_id
            )
    for p in pending:
        if p.slug == c.slug:
            return Dropped(
                c.name, f"proposal #{p.id} for {p.slug} awaits review", True, matched=p.id
            )
    return None


@dataclass
class Retirements:
    """What one pass of the retirement check did."""

    proposed: list[Proposal] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)


async def propose_retirements(
    store: RetireStore,
    library: SkillLibrary,
    reviewer: Reviewer,
    effects: Mapping[str, SkillEffect],
    thresholds: EffectThresholds,
    *,
    run_id: int | None,
    now: float,
) -> Retirements:
    """Submit a retirement for every enabled skill judged harmful, unless it repeats one."""
    done = Retirements()
    enabled = {r.slug: r.source for r in await store.skill_records() if r.enabled}
    targets = sorted(n for n, e in effects.items() if n in enabled and harmful(e))
    if not targets:
        return done
    pending = await store.pending_proposals()
    rejections = await store.rejections()
    for name in targets:
        live = load_live(library, name, enabled[name])
        if live is None or content_hash(live.text) != effects[name].content_hash:
            continue  # the figures are of another text (changed on disk since the last sync)
        sources = await store.exposure_sessions(name)
        candidate = retire_candidate(live, effects[name], thresholds, sources, now)
        dropped = repeat(candidate, pending, rejections)
        if dropped is not None:
            done.dropped.append(dropped)
            continue
        proposal = await reviewer.submit(candidate, run_id)
        done.proposed.append(proposal)
        if proposal.status == "pending":
            pending.append(proposal)
    return done
