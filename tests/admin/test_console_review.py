"""Reviewing in the web console: the proposal page, approve, reject and rollback."""

from __future__ import annotations

import re
from collections.abc import Callable

from gateway.config import Settings
from gateway.skills.library import parse_skill
from tests.console_support import (
    NEW_WRITING,
    WRITING,
    Decisions,
    csrf_of,
    seed_proposals,
    sign_in,
)
from tests.fakes.openai_server import FakeOpenAI
from tests.synthesis_support import follow, gateway, synth_settings


def rows_of(html: str, kind: str) -> list[str]:
    """The diff rows of one kind (equal, replace, delete, insert)."""
    return re.findall(rf'<tr class="{kind}">(.*?)</tr>', html, re.DOTALL)


async def test_the_proposal_page_shows_rationale_provenance_and_a_side_by_side_diff(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with gateway(synth_settings(make_settings, fake_llm)) as gw:
        ids = await seed_proposals(gw, fake_llm)
        await sign_in(gw.client)

        listing = await (await gw.client.get("/admin/proposals")).text()
        pending = listing.split('id="pending"')[1].split("</ul>")[0]
        assert f"/admin/proposals/{ids['create']}" in pending
        assert f"/admin/proposals/{ids['update']}" in pending

        resp = await gw.client.get(f"/admin/proposals/{ids['update']}")
        assert resp.status == 200
        page = await resp.text()
        assert "A long answer was rated down as far too long." in page
        assert "fake-model" in page
        sid = ids["session"]
        assert f'href="/admin/conversations/{sid}"' in page
        assert "far too long for a chat" in page
        assert re.search(rf'href="/admin/conversations/{sid}#m\d+">👎', page)
        # Changed lines sit side by side; the live skill's unchanged lines are shown once each.
        changed = "".join(rows_of(page, "replace") + rows_of(page, "insert"))
        assert "<ins>" in changed or 'class="code new"' in changed
        assert "At most three short paragraphs." in changed
        removed = "".join(rows_of(page, "replace") + rows_of(page, "delete"))
        assert "Never use Markdown tables: they break on narrow screens." in removed
        assert any("# Writing for a chat screen" in row for row in rows_of(page, "equal"))
        assert 'id="approve"' in page and 'name="reason"' in page
        # Bookkeeping is listed apart and counted nowhere; the phone view marks every line.
        bookkeeping = page.split('id="bookkeeping"')[1].split("</details>")[0]
        assert "proposal, based_on, model, generated_at, review" in bookkeeping
        assert f"<dd>{ids['update']}</dd>" in bookkeeping
        assert not any(
            "generated_at" in row or "based_on" in row for row in rows_of(page, "insert")
        )
        unified = page.split('class="diff diff-unified"')[1].split("</table>")[0]
        assert (
            'aria-label="removed">\N{MINUS SIGN}</td>' in unified
            and 'aria-label="added">+</td>' in unified
        )

        new_skill = await (await gw.client.get(f"/admin/proposals/{ids['create']}")).text()
        assert "a new skill: nothing before it" in new_skill
        assert 'class="diff diff-new"' in new_skill and 'class="code old"' not in new_skill
        assert "Only changed lines" not in new_skill
        assert not rows_of(new_skill, "equal") and not rows_of(new_skill, "delete")

        missing = await gw.client.get("/admin/proposals/999")
        assert missing.status == 404


async def test_approving_in_the_console_enables_the_skill_and_tells_the_listeners(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with gateway(synth_settings(make_settings, fake_llm)) as gw:
        ids = await seed_proposals(gw, fake_llm)
        decisions = Decisions()
        follow(gw.parts.review, decisions)
        csrf = await sign_in(gw.client)

        resp = await gw.client.post(
            f"/admin/proposals/{ids['create']}/approve", data={"csrf": csrf}
        )
        assert resp.status == 200
        assert resp.url.query["outcome"] == "approved"
        assert "is live and enabled" in await resp.text()
        [event] = decisions.events
        assert (event.proposal.id, event.proposal.status) == (ids["create"], "approved")
        assert event.proposal.decided_by == "web"
        assert "chat-brevity" in gw.parts.catalog.enabled

        skills = await (await gw.client.get("/admin/skills")).text()
        row = skills.split('data-skill="chat-brevity"')[1].split("</tr>")[0]
        assert "enabled" in row and "status-approved" in row

        # A second decision changes nothing and says who decided first.
        again = await gw.client.post(
            f"/admin/proposals/{ids['create']}/reject", data={"csrf": csrf}
        )
        assert again.url.query["outcome"] == "decided"
        assert "Someone decided first" in await again.text()
        assert len(decisions.events) == 1


async def test_rejecting_in_the_console_keeps_the_reason_for_good(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with gateway(synth_settings(make_settings, fake_llm)) as gw:
        ids = await seed_proposals(gw, fake_llm)
        decisions = Decisions()
        follow(gw.parts.review, decisions)
        csrf = await sign_in(gw.client)
        reason = "Too terse <for> support questions"
        asked = await gw.client.post(
            f"/admin/proposals/{ids['update']}/reject", data={"csrf": csrf, "reason": reason}
        )
        question = await asked.text()
        assert asked.status == 200 and "A rejection is remembered" in question
        assert 'name="confirmed" value="yes"' in question
        assert "Too terse &lt;for&gt; support questions</textarea>" in question
        assert decisions.events == []  # nothing is rejected before the confirmation
        assert (await gw.call("GET", f"/proposals/{ids['update']}"))[1]["status"] == "pending"
        resp = await gw.client.post(
            f"/admin/proposals/{ids['update']}/reject",
            data={"csrf": csrf, "reason": reason, "confirmed": "yes"},
        )
        page = await resp.text()
        assert "Rejected." in page
        assert "Too terse &lt;for&gt; support questions" in page
        [event] = decisions.events
        assert (event.proposal.status, event.proposal.reason) == ("rejected", reason)
        [tomb] = await gw.parts.store.rejections()
        assert (tomb.proposal_id, tomb.reason, tomb.decided_by) == (ids["update"], reason, "web")
        assert not (gw.skills_dir / WRITING / "SKILL.md.proposed").exists()

        too_long = await gw.client.post(
            f"/admin/proposals/{ids['create']}/reject", data={"csrf": csrf, "reason": "x" * 2001}
        )
        assert too_long.status == 400
        assert (await gw.call("GET", f"/proposals/{ids['create']}"))[1]["status"] == "pending"


async def test_an_approved_update_rolls_back_from_the_skill_page(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with gateway(synth_settings(make_settings, fake_llm)) as gw:
        ids = await seed_proposals(gw, fake_llm)
        live = gw.skills_dir / WRITING / "SKILL.md"
        before = live.read_text()
        csrf = await sign_in(gw.client)
        await gw.client.post(f"/admin/proposals/{ids['update']}/approve", data={"csrf": csrf})
        assert parse_skill(live.read_text()).body.strip() == NEW_WRITING

        page = await (await gw.client.get(f"/admin/skills/{WRITING}")).text()
        assert f'action="/admin/proposals/{ids["update"]}/rollback"' in page
        assert "Replaced versions" in page and "Never use Markdown tables" in page
        decided = await (await gw.client.get(f"/admin/proposals/{ids['update']}")).text()
        assert "before (replaced by this proposal)" in decided

        resp = await gw.client.post(
            f"/admin/proposals/{ids['update']}/rollback",
            data={"csrf": csrf_of(page), "reason": "answers got worse"},
        )
        assert resp.status == 200 and resp.url.path == f"/admin/skills/{WRITING}"
        page = await resp.text()
        assert "is live again" in page
        assert live.read_text() == before
        assert "status-rolled_back" in page and 'rollback"' not in page

        refused = await gw.client.post(
            f"/admin/proposals/{ids['update']}/rollback", data={"csrf": csrf}
        )
        assert refused.status == 409
        assert "not an approved update" in await refused.text()
