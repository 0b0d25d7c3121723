"""Totals that the metrics read at scrape time."""

from __future__ import annotations

from sqlite_utils import Database

from gateway.store.base import QueriesBase


class StatsQueries(QueriesBase):
    """Counts by rating and by status."""

    async def feedback_counts(self) -> dict[int, int]:
        """How many stored ratings there are of each value (+1, -1)."""
        return await self.run(
            lambda db: {
                int(r["rating"]): int(r["n"])
                for r in db.query("select rating, count(*) as n from feedback group by rating")
            }
        )

    async def proposal_counts(self) -> dict[str, int]:
        """Proposals by review status; {} while the database has no proposals table."""

        def count(db: Database) -> dict[str, int]:
            table = db.table("proposals")
            if not table.exists() or "status" not in table.columns_dict:
                return {}
            return {
                str(r["status"]): int(r["n"])
                for r in db.query("select status, count(*) as n from proposals group by status")
            }

        return await self.run(count)
