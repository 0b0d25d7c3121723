"""Console pages show what the store holds: conversations, skill use, feedback, runs."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from datetime import UTC, datetime

from gateway.config import Settings
from gateway.store import SqliteStore
from tests.console_support import WRITING, day_at, seed_rated_answer, sign_in
from tests.fakes.openai_server import FakeOpenAI
from tests.synthesis_support import gateway, seed_session, synth_settings


def points(html: str) -> list[str]:
    return re.findall(r'<circle class="point[^"]*"[^>]* data-day="([0-9-]+)"', html)


async def test_a_transcript_shows_traces_ratings_and_marks_placeholders(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with gateway(synth_settings(make_settings, fake_llm)) as gw:
        store = gw.parts.store
        failed = await seed_session(store, failed=True, rating=None, question="Still there?")
        sid, answer_id = await seed_rated_answer(
            store, at=day_at(0), rating=-1, comment="missed the point", loaded=[WRITING]
        )
        await sign_in(gw.client)

        listing = await (await gw.client.get("/admin/conversations")).text()
        assert f'href="/admin/conversations/{failed}"' in listing
        assert f'href="/admin/conversations/{sid}"' in listing
        telegram_only = await (await gw.client.get("/admin/conversations?channel=line")).text()
        assert "No conversations yet." in telegram_only

        page = await (await gw.client.get(f"/admin/conversations/{failed}")).text()
        assert "Still there?" in page
        assert "error placeholder" in page and "never sent back to the model" in page
        assert "ModelUnavailable: model unreachable" in page and "failed" in page

        page = await (await gw.client.get(f"/admin/conversations/{sid}")).text()
        assert f'id="m{answer_id}"' in page
        assert f'href="/admin/skills/{WRITING}">loaded {WRITING}' in page
        assert "missed the point" in page and "👎" in page
        assert "error placeholder" not in page
        assert (await gw.client.get("/admin/conversations/12345")).status == 404


async def test_the_skills_page_counts_uses_and_the_thumbs_up_rate(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with gateway(synth_settings(make_settings, fake_llm)) as gw:
        store = gw.parts.store
        # A skill is measured from when its current text took effect: seed answers after it.
        now = time.time()
        for rating in (1, 1, -1):
            await seed_rated_answer(store, at=now, rating=rating, loaded=[WRITING])
        await seed_session(store, rating=None, loaded=[WRITING], at=now)  # used, never rated
        await seed_rated_answer(store, at=now, rating=-1)  # loaded nothing
        await sign_in(gw.client)

        page = await (await gw.client.get("/admin/skills")).text()
        row = page.split(f'data-skill="{WRITING}"')[1].split("</tr>")[0]
        cells = re.findall(r'<td [^>]*class="right num-cell[^"]*">(.*?)</td>', row, re.DOTALL)
        assert cells[0].strip() == "4"
        assert cells[1].startswith("67%") and "of 3" in cells[1]
        other = page.split('data-skill="summarize-text"')[1].split("</tr>")[0]
        assert "—" in other and "bundled" in other

        detail = await (await gw.client.get(f"/admin/skills/{WRITING}")).text()
        assert "# Writing for a chat screen" in detail and "67%" in detail
        assert (await gw.client.get("/admin/skills/no-such-skill")).status == 404
        assert (await gw.client.get("/admin/skills/..%2Fetc")).status == 404


async def test_the_feedback_page_charts_each_day_and_lists_the_latest_downvotes(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with gateway(synth_settings(make_settings, fake_llm)) as gw:
        store = gw.parts.store
        for days_ago, ratings in {1: (1, 1, -1), 3: (1,), 6: (-1, -1), 45: (1,)}.items():
            for rating in ratings:
                await seed_rated_answer(store, at=day_at(days_ago), rating=rating)
        sid, answer_id = await seed_rated_answer(
            store, at=day_at(0), rating=-1, comment="wrong timezone in the answer"
        )
        await sign_in(gw.client)

        page = await (await gw.client.get("/admin/feedback")).text()
        days = [datetime.fromtimestamp(day_at(n), UTC).date().isoformat() for n in (6, 3, 1, 0)]
        assert points(page) == days
        # Yesterday's point is the rolling rate: 3 👍 of the 6 ratings of the last 7 days,
        # with yesterday's own count (3) beside it and as a bar.
        assert f'data-day="{days[2]}" data-rate="0.500" data-total="6" data-day-total="3"' in page
        assert '<rect class="bar"' in page and f'data-day="{days[2]}" data-total="3"' in page
        assert '<div class="stat-value" id="total-ratings">7</div>' in page
        assert "wrong timezone in the answer" in page
        assert f'href="/admin/conversations/{sid}#m{answer_id}"' in page

        everything = await (await gw.client.get("/admin/feedback?days=all")).text()
        assert len(points(everything)) == 5
        week = await (await gw.client.get("/admin/feedback?days=bogus")).text()
        assert points(week) == days


async def test_daily_ratings_group_by_utc_day_of_the_rating(tmp_path: object) -> None:
    async with SqliteStore(f"{tmp_path}/db.sqlite") as store:
        midnight = datetime(2025, 3, 9, tzinfo=UTC).timestamp()
        await seed_rated_answer(store, at=midnight - 60, rating=1)
        await seed_rated_answer(store, at=midnight + 60, rating=-1)
        await seed_rated_answer(store, at=midnight + 3600, rating=1)
        rows = await store.daily_ratings()
        assert [(r.day, r.ups, r.downs) for r in rows] == [
            ("2025-03-08", 1, 0),
            ("2025-03-09", 1, 1),
        ]
        assert [r.day for r in await store.daily_ratings(since=midnight)] == ["2025-03-09"]


async def test_the_runs_page_shows_counts_and_errors(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with gateway(synth_settings(make_settings, fake_llm)) as gw:
        await gw.seed()
        fake_llm.reply("this is not JSON")
        status, failed = await gw.call("POST", "/synthesize")
        assert status == 200 and failed["status"] == "failed"
        await sign_in(gw.client)
        page = await (await gw.client.get("/admin/runs")).text()
        row = page.split(f'id="run-{failed["run_id"]}"')[1].split('<tr id="run-')[0]
        assert "run-failed" in row and "fake-model" in row
        assert "not valid proposal JSON" in row or "model answered" in row
