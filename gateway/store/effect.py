"""Rated answers counted per skill: loaded, offered only, withheld (see gateway.skills.effect)."""

from __future__ import annotations

from typing import Any

from sqlite_utils import Database

from gateway.skills.effect import SkillTallies, Tally
from gateway.store.base import QueriesBase

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
_ARM = f"""
select '{{arm}}' as arm, j.value as slug, count(*) as answers,
    coalesce(sum(a.vote > 0), 0) as up, coalesce(sum(a.vote < 0), 0) as down
from {{source}} a cross join json_each(a.{{column}}) j
where {_SINCE} {{extra}}
group by j.value
"""
_NOT_LOADED = "and not exists (select 1 from json_each(a.skills_loaded) k where k.value = j.value)"
_TALLIES = (
    _ANSWERS
    + _ARM.format(arm="loaded", source="answers", column="skills_loaded", extra="")
    + " union all "
    + _ARM.format(arm="offered", source="rated", column="skills_offered", extra=_NOT_LOADED)
    + " union all "
    + _ARM.format(arm="withheld", source="rated", column="skills_withheld", extra=_NOT_LOADED)
)
_EXPOSURES = (
    _ANSWERS
    + f"""
select a.session_id from rated a cross join json_each(a.skills_loaded) j
where j.value = ? and a.vote != 0 and {_SINCE}
group by a.session_id order by max(a.id) desc limit ?
"""
)


class EffectQueries(QueriesBase):
    """What the effect measurement reads."""

    async def skill_tallies(self) -> dict[str, SkillTallies]:
        """Every registered skill with its loaded, offered-only and withheld tallies."""

        def read(db: Database) -> dict[str, SkillTallies]:
            out = {
                r["slug"]: SkillTallies(
                    name=r["slug"], content_hash=r["content_hash"], since=r["content_since"]
                )
                for r in db.query("select slug, content_hash, content_since from skills")
            }
            for r in db.query(_TALLIES):
                row: dict[str, Any] = dict(r)
                tally = Tally(answers=row["answers"], up=row["up"], down=row["down"])
                setattr(out[row["slug"]], row["arm"], tally)
            return out

        return await self.run(read)

    async def exposure_sessions(self, name: str, limit: int = 50) -> list[int]:
        """Sessions holding rated answers that loaded the skill's current text, newest first."""
        return await self.run(
            lambda db: [int(r["session_id"]) for r in db.query(_EXPOSURES, [name, limit])]
        )
