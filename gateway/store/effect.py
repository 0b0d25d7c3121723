"""Rated answers counted per skill: loaded, offered only, withheld (see gateway.skills.effect),
and the tool calls of every answer in those arms."""

from __future__ import annotations

from collections.abc import Sequence

from gateway.core.tools import TOOL_FAILURES
from gateway.skills.effect import SkillTallies, Tally, ToolTally
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


def _not_loaded(d: Dialect) -> str:
    """Only answers that did not load the skill (an arm that counts it offered or withheld)."""
    loaded = d.json_elements("a.skills_loaded", "k")
    return f"and not exists (select 1 from {loaded} where k.value = j.value)"


def _arm(d: Dialect, arm: str, source: str, column: str, only_unloaded: bool) -> str:
    extra = _not_loaded(d) if only_unloaded else ""
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


def _tool_answers(d: Dialect) -> str:
    """Every answer with its count of tool calls and of failed ones (read from its trace).

    Most answers call no tool: their empty list is not unpacked (on 5,000 answers, half of
    them calling a tool, that took the query from 0.34 s to 0.14 s).
    """
    failures = ", ".join(f"'{s}'" for s in sorted(TOOL_FAILURES))
    status = d.json_text("k.value", "status")
    return f"""
with answers as (
    select m.id, m.created_at, t.skills_offered, t.skills_loaded, t.skills_withheld,
        case when t.tool_calls = '[]' then 0
            else (select count(*) from {d.json_elements("t.tool_calls", "k")}) end as calls,
        case when t.tool_calls = '[]' then 0
            else (select count(*) from {d.json_elements("t.tool_calls", "k")}
                  where {status} in ({failures})) end as failed
    from messages m
    join traces t on t.message_id = m.id
    where m.role = 'assistant' and m.kind = 'normal'
)
"""


def _tool_arm(d: Dialect, arm: str, column: str, only_unloaded: bool) -> str:
    extra = _not_loaded(d) if only_unloaded else ""
    return f"""
select '{arm}' as arm, j.value as slug, count(*) as answers,
    count(case when a.calls > 0 then 1 end) as calling,
    count(case when a.failed > 0 then 1 end) as failing,
    coalesce(sum(a.calls), 0) as calls, coalesce(sum(a.failed), 0) as failed
from answers a cross join {d.json_elements(f"a.{column}", "j")}
where {_SINCE} {extra}
group by j.value
"""


def _tool_tallies(d: Dialect) -> str:
    return " union all ".join(
        [
            _tool_answers(d) + _tool_arm(d, "tools_loaded", "skills_loaded", False),
            _tool_arm(d, "tools_offered", "skills_offered", True),
            _tool_arm(d, "tools_withheld", "skills_withheld", True),
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
        for r in await c.fetch(_tool_tallies(c.dialect)):
            counts = {k: int(r[k]) for k in ("answers", "calling", "failing", "calls", "failed")}
            setattr(out[r["slug"]], r["arm"], ToolTally(**counts))
        for r in await c.fetch("select slug, content_hash, look, verdict from skill_looks"):
            tallies = out.get(r["slug"])
            if tallies is not None and tallies.content_hash == r["content_hash"]:
                # Looks at an earlier text do not count for this one.
                tallies.looked, tallies.reached = int(r["look"]), r["verdict"]
        return out

    @transaction
    async def record_looks(self, c: Conn, looks: Sequence[SkillTallies], at: float) -> None:
        """Record the last look taken at each skill's text and the verdict it reached."""
        if not looks:
            return
        await c.executemany(
            "insert into skill_looks (slug, content_hash, look, verdict, taken_at)"
            " values (?, ?, ?, ?, ?) on conflict (slug) do update set"
            " content_hash = excluded.content_hash, look = excluded.look,"
            " verdict = excluded.verdict, taken_at = excluded.taken_at",
            [(t.name, t.content_hash, t.looked, t.reached, at) for t in looks],
        )

    @query
    async def exposure_sessions(self, c: Conn, name: str, limit: int = 50) -> list[int]:
        """Sessions holding rated answers that loaded the skill's current text, newest first."""
        rows = await c.fetch(_exposures(c.dialect), name, c.dialect.limit(limit))
        return [int(r["session_id"]) for r in rows]
