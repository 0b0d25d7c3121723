"""Per-skill statistics from answers' traces and their ratings."""

from __future__ import annotations

from pydantic import BaseModel

from gateway.store.base import QueriesBase


class SkillRatings(BaseModel):
    """Ratings of answers whose trace loaded one skill."""

    slug: str
    up: int = 0
    down: int = 0
    answers: int = 0

    @property
    def rated(self) -> int:
        return self.up + self.down

    @property
    def up_rate(self) -> float | None:
        """Share of 👍 among the ratings, or None before any rating."""
        return self.up / self.rated if self.rated else None


class SkillStatsQueries(QueriesBase):
    """How the answers that used each skill were rated."""

    async def skill_ratings(self) -> dict[str, SkillRatings]:
        """Per skill slug: 👍 and 👎 counts, and how many rated answers loaded it."""
        # One row per rating (a group answer can be rated by several people).
        sql = (
            "select j.value as slug, sum(f.rating > 0) as up, sum(f.rating < 0) as down,"
            " count(distinct f.message_id) as answers"
            " from feedback f join traces t on t.message_id = f.message_id,"
            " json_each(t.skills_loaded) j group by j.value"
        )
        return await self.run(
            lambda db: {
                str(r["slug"]): SkillRatings(
                    slug=str(r["slug"]),
                    up=int(r["up"] or 0),
                    down=int(r["down"] or 0),
                    answers=int(r["answers"]),
                )
                for r in db.query(sql)
            }
        )
