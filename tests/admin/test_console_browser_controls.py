"""The console in a real browser: names beside ids, the user picker, styled inputs, Usage
on a phone, 👎 excerpts that end on a line, the reject wording beside Reopen, the jump to
the decision.
"""

from __future__ import annotations

import pytest
from playwright.async_api import Page, expect

from tests.admin.test_console_browser import (
    CHROMIUM,
    DESKTOP,
    PHONE,
    browser,
    gw,
    llm,
    page,
    sign_in,
    url,
)
from tests.console_support import day_at, seed_proposals, seed_rated_answer
from tests.fakes.openai_server import FakeOpenAI
from tests.store_support import current_session, open_turn
from tests.synthesis_support import Gateway

__all__ = ["browser", "gw", "llm", "page"]  # the fixtures, shared with the console's tests
pytestmark = [
    pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed"),
    pytest.mark.asyncio(loop_scope="module"),
]
LONG_ANSWER = "\n".join(f"Step {n}: do the {n}th thing carefully." for n in range(1, 13))


async def styled(page: Page, selector: str) -> dict[str, str]:
    found: dict[str, str] = await page.locator(selector).first.evaluate(
        "e => { const s = getComputedStyle(e);"
        " return {radius: s.borderTopLeftRadius, display: s.display, width: s.width}; }"
    )
    return found


async def test_the_users_page_offers_the_known_users_in_styled_controls(
    page: Page, gw: Gateway
) -> None:
    store = gw.parts.store
    for chat, user in (("c1", "1001"), ("c2", "Uaaaa")):
        await current_session(store, "telegram" if user.isdigit() else "line", chat, user, 1.0, 60)
    await sign_in(page, gw, "/admin/users")
    options = page.locator("#known-users option")
    await expect(options).to_have_count(2)
    assert {await o.get_attribute("value") for o in await options.all()} == {"1001", "Uaaaa"}
    await expect(page.locator("#export-user")).to_have_attribute("list", "known-users")
    for selector in ("#export-user", "#export-channel", "#forget-user"):
        assert (await styled(page, selector))["radius"] == "8px", selector
    await page.fill("#export-user", "1001")
    await expect(page.locator("#export-user")).to_have_value("1001")


async def test_usage_tables_become_cards_on_a_phone(page: Page, gw: Gateway) -> None:
    await seed_rated_answer(gw.parts.store, at=day_at(0), rating=1)
    await sign_in(page, gw, "/admin/usage")
    row = page.locator("table.stack tbody tr").first
    await expect(row).to_be_visible()
    assert (await styled(page, "table.stack thead"))["display"] != "none"
    await page.set_viewport_size(PHONE)
    assert (await styled(page, "table.stack thead"))["display"] == "none"
    assert (await styled(page, "table.stack tbody tr"))["display"] == "grid"
    label = await row.locator("td[data-label='answers']").evaluate(
        "e => getComputedStyle(e, '::before').content"
    )
    assert label == '"answers"'  # each value says its column, so nothing is hidden
    await page.set_viewport_size(DESKTOP)


async def test_a_long_downvoted_answer_ends_on_a_line_and_the_rest_is_behind_more(
    page: Page, gw: Gateway
) -> None:
    await seed_rated_answer(
        gw.parts.store, at=day_at(0), rating=-1, comment="Too long", answer_text=LONG_ANSWER
    )
    await sign_in(page, gw, "/admin/feedback")
    card = page.locator("#downvotes li.downvote").first
    await expect(card.locator(".answer")).to_contain_text("Step 6: do the 6th thing carefully.")
    rest = card.locator("details.excerpt-more")
    await expect(rest.locator("summary")).to_have_text("more")
    await expect(card.get_by_text("Step 7: do the 7th thing carefully.")).to_be_hidden()
    await rest.locator("summary").click()
    await expect(card.get_by_text("Step 12: do the 12th thing carefully.")).to_be_visible()


async def test_reject_says_it_lasts_until_reopened_and_the_decision_is_a_jump_away(
    page: Page, gw: Gateway, llm: FakeOpenAI
) -> None:
    ids = await seed_proposals(gw, llm)
    await page.set_viewport_size(PHONE)
    await sign_in(page, gw, f"/admin/proposals/{ids['update']}")
    jump = page.locator("#jump-to-decision")
    await expect(jump).to_be_in_viewport()
    await expect(page.locator("#approve")).not_to_be_in_viewport()
    await jump.click()
    await expect(page.locator("#approve")).to_be_in_viewport()
    await page.click("#reject")
    confirm = page.locator("#confirm-reject")
    await expect(confirm).to_contain_text("until an admin reopens it")
    await expect(confirm).not_to_contain_text("for good")
    await page.click("#confirm-reject-button")
    await expect(page.locator("#reopen")).to_be_visible()  # as the confirmation said
    await page.goto(url(gw, f"/admin/proposals/{ids['update']}"))
    await expect(page.locator("#jump-to-decision")).to_have_text("The decision ↓")
    await page.set_viewport_size(DESKTOP)


async def test_people_are_named_beside_their_ids_at_desk_and_on_a_phone(
    page: Page, gw: Gateway
) -> None:
    await open_turn(gw.parts.store, 
        "telegram", "9009", "9009", "hello", inbox_id=None, now=day_at(0),
        idle_seconds=60, history_limit=10, user_name="Beatrice",
    )  # fmt: skip
    await sign_in(page, gw, "/admin/conversations")
    row = page.locator("#sessions tr", has_text="9009")
    await expect(row.locator(".user-name")).to_have_text("Beatrice")
    await page.set_viewport_size(PHONE)
    item = page.locator("#session-list li", has_text="Beatrice")
    await expect(item).to_be_visible()
    await item.click()
    await expect(page.locator("dd", has_text="9009").locator(".user-name")).to_have_text("Beatrice")
    await page.set_viewport_size(DESKTOP)
