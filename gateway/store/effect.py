"""Rated answers counted per skill: loaded, offered only, withheld (see gateway.skills.effect)."""

from __future__ import annotations

from gateway.skills.effect import SkillTallies, Tally
from gateway.store.sql import Conn, Dialect, QueriesBase, query, transaction

# One row per answer: its trace's skill lists and the majority of its ratings (+1, -1, or
# 0 for a tie or no rating). Only normal answers carry rating buttons. `answers` holds every
# answer (a skill's uses); `rated` only those someone rated, which is all a comparison needs
# and, since most answers go unrated, far fewer rows to unpack.
_VOTE = "case when v.score > 0 then 1 when v.score < 0 then -1 else 0 end as vote"
_COLUMNS = "m.id, m.session_id, m.created_at, t.skills_offered, t.skills_loaded, t.skills_withheld"
_ANSWERS = f"""
with votes as (
    select message_id, sum(rating) as score from feedback group by message_id
),
answers as (
    select {_COLUMNS}, {_VOTE}
    from messages m
    join traces t on t.message_id = m.id
    left join votes v on v.message_id = m.id
    where m.role = 'assistant' and m.kind = 'normal'
),
rated as (
    select {_COLUMNS}, {_VOTE}
    from votes v
    join messages m on m.id = v.message_id
    join traces t on t.message_id = m.id
    where m.role = 'assistant' and m.kind = 'normal'
)
"""

# Each arm counts answers made since the skill's current text took effect (unregistered
# names drop out: their start is null). The start is looked up per row rather than joined,
# so that SQLite's planner cannot loop over skills and scan every answer once per skill.
_SINCE = "a.created_at >= (select s.content_since from skills s where s.slug = j.value)"


def _arm(d: Dialect, arm: str, source: str, column: str, only_unloaded: bool) -> str:
    extra = (
        f"and not exists (select 1 from {d.json_elements('a.skills_loaded', 'k')}"
        " where k.value = j.value)"
        if only_unloaded
        else ""
    )
    return f"""
select '{arm}' as arm, j.value as slug, count(*) as answers,
    count(case when a.vote > 0 then 1 end) as up, count(case when a.vote < 0 then 1 end) as down
from {source} a cross join {d.json_elements(f"a.{column}", "j")}
where {_SINCE} {extra}
group by j.value
"""


def _tallies(d: Dialect) -> str:
    return " union all ".join(
        [
            _ANSWERS + _arm(d, "loaded", "answers", "skills_loaded", only_unloaded=False),
            _arm(d, "offered", "rated", "skills_offered", only_unloaded=True),
            _arm(d, "withheld", "rated", "skills_withheld", only_unloaded=True),
        ]
    )


def _exposures(d: Dialect) -> str:
    return (
        _ANSWERS
        + f"""
select a.session_id from rated a cross join {d.json_elements("a.skills_loaded", "j")}
where j.value = ? and a.vote != 0 and {_SINCE}
group by a.session_id order by max(a.id) desc limit ?
"""
    )


class EffectQueries(QueriesBase):
    """What the effect measurement reads."""

    @transaction
    async def skill_tallies(self, c: Conn) -> dict[str, SkillTallies]:
        """Every registered skill with its loaded, offered-only and withheld tallies."""
        if c.dialect.snapshot:
            # The skills and their counts from one snapshot, so every counted slug is listed.
            await c.execute(c.dialect.snapshot)
        out = {
            r["slug"]: SkillTallies(
                name=r["slug"], content_hash=r["content_hash"], since=r["content_since"]
            )
            for r in await c.fetch("select slug, content_hash, content_since from skills")
        }
        for r in await c.fetch(_tallies(c.dialect)):
            tally = Tally(answers=r["answers"], up=r["up"], down=r["down"])
            setattr(out[r["slug"]], r["arm"], tally)
        return out

    @query
    async def exposure_sessions(self, c: Conn, name: str, limit: int = 50) -> list[int]:
        """Sessions holding rated answers that loaded the skill's current text, newest first."""
        rows = await c.fetch(_exposures(c.dialect), name, c.dialect.limit(limit))
        return [int(r["session_id"]) for r in rows]
