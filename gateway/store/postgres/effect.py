"""Rated answers counted per skill on PostgreSQL: loaded, offered only, withheld.

The same counts as `gateway.store.effect` (see gateway.skills.effect), in PostgreSQL's
dialect: the JSON skill lists are unpacked with `jsonb_array_elements_text`.
"""

from __future__ import annotations

from gateway.skills.effect import SkillTallies, Tally
from gateway.store.effect import _ANSWERS, _SINCE
from gateway.store.postgres.base import PgQueriesBase

# Which answers count, and each one's vote, is portable SQL shared with SQLite; so is the
# test of when a skill's current text took effect (`j.value` is an unpacked skill name).
_ARM = f"""
select '{{arm}}'::text as arm, j.value as slug, count(*) as answers,
    count(*) filter (where a.vote > 0) as up, count(*) filter (where a.vote < 0) as down
from {{source}} a cross join jsonb_array_elements_text(a.{{column}}::jsonb) as j (value)
where {_SINCE} {{extra}}
group by j.value
"""
_NOT_LOADED = (
    "and not exists (select 1 from jsonb_array_elements_text(a.skills_loaded::jsonb)"
    " as k (value) where k.value = j.value)"
)
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
select a.session_id from rated a
cross join jsonb_array_elements_text(a.skills_loaded::jsonb) as j (value)
where j.value = $1 and a.vote != 0 and {_SINCE}
group by a.session_id order by max(a.id) desc limit $2
"""
)


class PgEffectQueries(PgQueriesBase):
    """What the effect measurement reads."""

    async def skill_tallies(self) -> dict[str, SkillTallies]:
        """Every registered skill with its loaded, offered-only and withheld tallies."""
        async with self._tx() as conn:
            # The skills and their counts from one snapshot, so every counted slug is listed.
            await conn.execute("set transaction isolation level repeatable read, read only")
            out = {
                r["slug"]: SkillTallies(
                    name=r["slug"], content_hash=r["content_hash"], since=r["content_since"]
                )
                for r in await conn.fetch("select slug, content_hash, content_since from skills")
            }
            for r in await conn.fetch(_TALLIES):
                tally = Tally(answers=r["answers"], up=r["up"], down=r["down"])
                setattr(out[r["slug"]], r["arm"], tally)
        return out

    async def exposure_sessions(self, name: str, limit: int = 50) -> list[int]:
        """Sessions holding rated answers that loaded the skill's current text, newest first."""
        rows = await self._fetch(_EXPOSURES, name, None if limit < 0 else limit)
        return [int(r["session_id"]) for r in rows]
