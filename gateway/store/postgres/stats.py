"""Totals that the metrics read at scrape time, on PostgreSQL."""

from __future__ import annotations

from gateway.store.postgres.base import PgQueriesBase


class PgStatsQueries(PgQueriesBase):
    """Counts by rating and by status."""

    async def feedback_counts(self) -> dict[int, int]:
        """How many stored ratings there are of each value (+1, -1)."""
        rows = await self._fetch("select rating, count(*) as n from feedback group by rating")
        return {int(r["rating"]): int(r["n"]) for r in rows}

    async def proposal_counts(self) -> dict[str, int]:
        """Proposals by review status; {} while the database has no proposals table."""
        # Opening the store migrates it, so on PostgreSQL the table is always there.
        rows = await self._fetch("select status, count(*) as n from proposals group by status")
        return {str(r["status"]): int(r["n"]) for r in rows}
