"""Totals that the metrics read at scrape time."""

from __future__ import annotations

from gateway.store.sql import Conn, QueriesBase, query


class StatsQueries(QueriesBase):
    """Counts by rating and by status."""

    @query
    async def feedback_counts(self, c: Conn) -> dict[int, int]:
        """How many stored ratings there are of each value (+1, -1)."""
        rows = await c.fetch("select rating, count(*) as n from feedback group by rating")
        return {int(r["rating"]): int(r["n"]) for r in rows}

    @query
    async def proposal_counts(self, c: Conn) -> dict[str, int]:
        """Proposals by review status."""
        # Opening the store migrates it, so the table is always there.
        rows = await c.fetch("select status, count(*) as n from proposals group by status")
        return {str(r["status"]): int(r["n"]) for r in rows}
