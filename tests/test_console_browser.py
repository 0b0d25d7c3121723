"""The console in a real browser: Debian's chromium, headless, driven by Playwright.

The gateway runs on a loopback port in the test's event loop; each test leaves a
screenshot of its last page in test-output/screenshots/<test name>.png.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, async_playwright, expect

from gateway.config import Settings
from tests.console_support import (
    TOKEN,
    WRITING,
    Decisions,
    day_at,
    seed_proposals,
    seed_rated_answer,
)
from tests.fakes.openai_server import FakeOpenAI
from tests.synthesis_support import Gateway, gateway, synth_settings

CHROMIUM = shutil.which("chromium") or (
    "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
)
SHOTS = Path(__file__).resolve().parent.parent / "test-output" / "screenshots"
ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}

pytestmark = [
    pytest.mark.skipif(
        CHROMIUM is None,
        reason="Debian's chromium is not installed (apt-get install chromium; .ci/run does)",
    ),
    pytest.mark.asyncio(loop_scope="module"),
]


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def browser() -> AsyncIterator[Browser]:
    assert CHROMIUM is not None
    async with async_playwright() as pw:
        launched = await pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield launched
        await launched.close()


@pytest_asyncio.fixture(loop_scope="module")
async def llm() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as fake:
        yield fake


@pytest_asyncio.fixture(loop_scope="module")
async def gw(make_settings: Callable[..., Settings], llm: FakeOpenAI) -> AsyncIterator[Gateway]:
    async with gateway(synth_settings(make_settings, llm)) as running:
        yield running


@pytest_asyncio.fixture(loop_scope="module")
async def page(browser: Browser, request: pytest.FixtureRequest) -> AsyncIterator[Page]:
    context = await browser.new_context(viewport=DESKTOP)
    opened = await context.new_page()
    yield opened
    SHOTS.mkdir(parents=True, exist_ok=True)
    await opened.screenshot(path=SHOTS / f"{request.node.name}.png", full_page=True)
    await context.close()


def url(gw: Gateway, path: str) -> str:
    return str(gw.client.make_url(path))


async def sign_in(page: Page, gw: Gateway, path: str = "/admin/") -> None:
    await page.goto(url(gw, path))
    await expect(page).to_have_url(re.compile(r"/admin/login\?next="))
    await page.fill("#token", TOKEN)
    await page.click("form.login-card button[type=submit]")
    await expect(page.locator("nav.nav")).to_be_visible()


async def test_signing_in_with_the_admin_token_opens_the_console(page: Page, gw: Gateway) -> None:
    await sign_in(page, gw)
    await expect(page).to_have_url(url(gw, "/admin/proposals"))
    await expect(page.locator("h1")).to_have_text("Proposals")
    [cookie] = await page.context.cookies()
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/admin"
    assert await page.evaluate("document.cookie") == ""  # out of reach of scripts
    await page.click("nav.nav >> text=Skills")
    await expect(page.locator(f'tr[data-skill="{WRITING}"]')).to_be_visible()


async def test_approving_a_proposal_from_its_diff_page_enables_the_skill(
    page: Page, gw: Gateway, llm: FakeOpenAI
) -> None:
    ids = await seed_proposals(gw, llm)
    decisions = Decisions()
    gw.parts.review.listeners.append(decisions)
    await sign_in(page, gw)
    await page.click(f'#pending a[href="/admin/proposals/{ids["create"]}"]')
    staged = (gw.skills_dir / "chat-brevity" / "SKILL.md.proposed").read_text()
    await expect(page.locator("table.diff tr.insert")).to_have_count(len(staged.splitlines()))
    await expect(page.locator("table.diff tr.equal")).to_have_count(0)
    await expect(page.locator(".area-provenance")).to_contain_text("far too long for a chat")

    await page.click("#approve")
    await expect(page.locator(".banner.ok")).to_contain_text("chat-brevity is live and enabled")
    assert [e.proposal.decided_by for e in decisions.events] == ["web"]

    await page.click("nav.nav >> text=Skills")
    row = page.locator('tr[data-skill="chat-brevity"]')
    await expect(row.locator("td.enabled")).to_have_text("enabled")
    await expect(row).to_contain_text("approved")
    assert "chat-brevity" in gw.parts.catalog.enabled


async def test_rejecting_a_proposal_with_a_reason(page: Page, gw: Gateway, llm: FakeOpenAI) -> None:
    ids = await seed_proposals(gw, llm)
    decisions = Decisions()
    gw.parts.review.listeners.append(decisions)
    await sign_in(page, gw, f"/admin/proposals/{ids['update']}")
    await expect(page.locator("table.diff tr.replace").first).to_be_visible()
    unchanged = page.locator("table.diff tr.equal").first
    await expect(unchanged).to_be_visible()
    await page.check("text=Only changed lines")
    await expect(unchanged).to_be_hidden()
    await page.fill("#reason", "Numbered lists help here; keep them.")
    await page.click("#reject")
    await expect(page.locator(".banner.ok")).to_contain_text("Rejected.")
    await expect(page.locator("#decision-reason")).to_have_text(
        "Numbered lists help here; keep them."
    )
    [tomb] = await gw.parts.store.rejections()
    assert tomb.reason == "Numbered lists help here; keep them."
    assert [e.proposal.status for e in decisions.events] == ["rejected"]


async def test_the_feedback_chart_has_one_point_per_day_of_seeded_data(
    page: Page, gw: Gateway
) -> None:
    store = gw.parts.store
    seeded = {0: (1, -1), 2: (1, 1, 1), 5: (-1,), 9: (1, -1, -1), 20: (1,)}
    for days_ago, ratings in seeded.items():
        for rating in ratings:
            await seed_rated_answer(store, at=day_at(days_ago), rating=rating)
    sid, answer_id = await seed_rated_answer(
        store, at=day_at(0, hour=13), rating=-1, comment="It quoted the wrong price."
    )
    await sign_in(page, gw, "/admin/feedback")
    points = page.locator("#rate-chart circle.point")
    await expect(points).to_have_count(len(seeded))
    days = sorted(datetime.fromtimestamp(day_at(n), UTC).date().isoformat() for n in seeded)
    assert [await p.get_attribute("data-day") for p in await points.all()] == days

    await page.set_viewport_size(PHONE)
    box = await page.locator("#rate-chart").bounding_box()
    assert box is not None and box["width"] <= PHONE["width"]
    SHOTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=SHOTS / "feedback_on_a_phone.png", full_page=True)

    await page.click(f'a[href="/admin/conversations/{sid}#m{answer_id}"]')
    message = page.locator(f"#m{answer_id}")
    await expect(message).to_contain_text("It quoted the wrong price.")
    await page.set_viewport_size(DESKTOP)


async def test_a_request_without_the_cookie_or_with_a_bad_csrf_token_is_refused(
    page: Page, gw: Gateway, llm: FakeOpenAI, browser: Browser
) -> None:
    ids = await seed_proposals(gw, llm)
    target = f"/admin/proposals/{ids['create']}"
    await sign_in(page, gw, target)
    await page.evaluate("document.querySelectorAll('input[name=csrf]').forEach(i => i.value = 'x')")
    async with page.expect_response(lambda r: r.request.method == "POST") as posted:
        await page.click("#approve")
    assert (await posted.value).status == 403
    await expect(page.locator("h1")).to_have_text("Refused")

    stranger = await browser.new_context()
    try:
        csrf = await page.evaluate("document.querySelector('input[name=csrf]')?.value ?? 'x'")
        resp = await stranger.request.post(url(gw, f"{target}/approve"), form={"csrf": csrf})
        assert resp.status == 403
    finally:
        await stranger.close()
    _, detail = await gw.call("GET", f"/proposals/{ids['create']}")
    assert detail["status"] == "pending"
    assert not (gw.skills_dir / "chat-brevity" / "SKILL.md").exists()
