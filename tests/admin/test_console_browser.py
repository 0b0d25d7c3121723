"""The console in a real browser: Debian's chromium, headless, driven by Playwright.

The gateway runs on a loopback port in the test's event loop; each test leaves a
screenshot of its last page in test-output/screenshots/<test name>.png.
"""

from __future__ import annotations

import itertools
import math
import re
import shutil
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, async_playwright, expect

from gateway.config import Settings
from gateway.core.records import Trace
from gateway.synthesis.synthesizer import LOCK_NAME
from tests.console_support import (
    TOKEN,
    WRITING,
    Decisions,
    day_at,
    seed_proposals,
    seed_rated_answer,
)
from tests.fakes.openai_server import FakeOpenAI
from tests.store_support import add_message, current_session
from tests.synthesis_support import Gateway, answer, follow, gateway, proposal, synth_settings

CHROMIUM = shutil.which("chromium") or (
    "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
)
SHOTS = Path(__file__).resolve().parents[2] / "test-output" / "screenshots"
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
DESKTOP = {"width": 1280, "height": 800}
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
    follow(gw.parts.review, decisions)
    await sign_in(page, gw)
    await page.click(f'#pending a[href="/admin/proposals/{ids["create"]}"]')
    staged = (gw.skills_dir / "chat-brevity" / "SKILL.md.proposed").read_text()
    # A new skill is its text alone, without the bookkeeping lines (listed apart).
    bookkeeping = ("  proposal:", "  based_on:", "  - ", "  model:", "  generated_at:", "  review:")
    shown = [line for line in staged.splitlines() if not line.startswith(bookkeeping)]
    await expect(page.locator("table.diff-new tr.insert")).to_have_count(len(shown))
    await expect(page.locator("table.diff tr.equal")).to_have_count(0)
    await expect(page.locator("td.code.old")).to_have_count(0)
    await expect(page.locator("#bookkeeping summary")).to_contain_text("generated_at")
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
    follow(gw.parts.review, decisions)
    await sign_in(page, gw, f"/admin/proposals/{ids['update']}")
    await expect(page.locator("table.diff-split tr.replace").first).to_be_visible()
    unchanged = page.locator("table.diff-split tr.equal.folded").first
    gap = page.locator("table.diff-split tr.gap").first
    await expect(unchanged).to_be_visible()
    await expect(gap).to_be_hidden()
    await page.check("text=Only changed lines")
    await expect(unchanged).to_be_hidden()
    await expect(gap).to_have_text(re.compile(r"⋯ \d+ unchanged lines? ⋯"))
    await page.fill("#reason", "Numbered lists help here; keep them.")
    await page.click("#reject")
    # Nothing is rejected yet: a confirmation page first, the reason carried over.
    await expect(page.locator("h1")).to_contain_text("Reject")
    await expect(page.locator("#reason")).to_have_value("Numbered lists help here; keep them.")
    assert [e.proposal.status for e in decisions.events] == []
    await page.click("#confirm-reject-button")
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


PAGES = (
    "proposals",
    "skills",
    "feedback",
    "conversations",
    "runs",
    "usage",
    "tools",
    "tasks",
    "users",
    "personas",
)


async def tabs_in_sight(page: Page, width: int) -> None:
    """Every console tab lies inside the viewport and is what a tap on it would hit."""
    tabs = page.locator("nav.nav a")
    await expect(tabs).to_have_count(len(PAGES))
    for tab in await tabs.all():
        box = await tab.bounding_box()
        assert box is not None
        assert box["x"] >= 0 and box["x"] + box["width"] <= width, await tab.text_content()
        hit = await page.evaluate(
            "([x, y]) => document.elementFromPoint(x, y)?.closest('a')?.getAttribute('href')",
            [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2],
        )
        assert hit == await tab.get_attribute("href")
    scroll = await page.evaluate("document.documentElement.scrollWidth")
    assert scroll <= width, f"the page scrolls sideways at {width} px"


async def test_every_tab_is_in_reach_at_desk_and_phone_widths_and_sessions_stay_compact(
    page: Page, gw: Gateway, llm: FakeOpenAI
) -> None:
    ids = await seed_proposals(gw, llm)
    for n in range(12):
        await seed_rated_answer(
            gw.parts.store, at=day_at(n % 3), rating=1 if n % 2 else -1, question=f"Question {n}"
        )
    await sign_in(page, gw)
    SHOTS.mkdir(parents=True, exist_ok=True)
    for size, label in ((DESKTOP, "desk"), (PHONE, "phone")):
        await page.set_viewport_size(size)
        for name in (*PAGES, f"runs/{ids['run']}", f"proposals/{ids['update']}"):
            await page.goto(url(gw, f"/admin/{name}"))
            await tabs_in_sight(page, size["width"])
            current = page.locator('nav.nav a[aria-current="page"]')
            await expect(current).to_have_count(1)
            shot = name.replace("/", "-")
            await page.screenshot(path=SHOTS / f"layout_{shot}_{size['width']}.png", full_page=True)
        await page.goto(url(gw, "/admin/conversations"))
        if label == "desk":
            await expect(page.locator("#sessions")).to_be_visible()
            await expect(page.locator("#session-list")).to_be_hidden()
            continue
        await expect(page.locator("#sessions")).to_be_hidden()
        rows = page.locator("#session-list li")
        await expect(rows).to_have_count(13)  # the 12 seeded and the proposals' source session
        for row in await rows.all():
            box = await row.bounding_box()
            assert box is not None and box["height"] < 100, box

        # The stacked diff: one column, minus and plus marks, the old and new numbers apart.
        await page.goto(url(gw, f"/admin/proposals/{ids['update']}"))
        await expect(page.locator("table.diff-split")).to_be_hidden()
        unified = page.locator("table.diff-unified")
        await expect(unified).to_be_visible()
        removed = unified.locator("tr.delete").first
        await expect(removed.locator("td.mark")).to_have_text("\N{MINUS SIGN}")
        await expect(removed.locator("td.num").nth(1)).to_have_text("")
        added = unified.locator("tr.insert").first
        await expect(added.locator("td.mark")).to_have_text("+")
        await expect(added.locator("td.num").first).to_have_text("")
    await page.set_viewport_size(DESKTOP)


async def test_reject_asks_first_and_cancel_leaves_the_proposal_pending(
    page: Page, gw: Gateway, llm: FakeOpenAI
) -> None:
    ids = await seed_proposals(gw, llm)
    await sign_in(page, gw, f"/admin/proposals/{ids['create']}")
    await page.click("#reject")
    await expect(page.locator("#confirm-reject")).to_contain_text("A rejection is remembered")
    await page.click("#cancel-reject")
    await expect(page).to_have_url(url(gw, f"/admin/proposals/{ids['create']}"))
    await expect(page.locator("#approve")).to_be_visible()
    _, detail = await gw.call("GET", f"/proposals/{ids['create']}")
    assert detail["status"] == "pending"
    assert await gw.parts.store.rejections() == []


async def test_run_synthesis_now_opens_the_run_with_what_it_did(
    page: Page, gw: Gateway, llm: FakeOpenAI
) -> None:
    sid = await gw.seed(comment="far too long for a chat", loaded=[WRITING])
    llm.reply(
        answer(
            proposal(based_on=[sid]),
            proposal("Bad Name", based_on=[sid]),
        )
    )
    await sign_in(page, gw, "/admin/runs")
    await expect(page.locator("#next-pass")).to_contain_text("No scheduled passes")
    await page.click("#run-now")
    await expect(page.locator("h1")).to_contain_text("Run #")
    proposed = page.locator("#run-proposed a")
    await expect(proposed).to_have_count(1)
    await expect(page.locator("#run-refused")).to_contain_text("invalid skill name")
    await page.set_viewport_size(PHONE)
    await tabs_in_sight(page, PHONE["width"])
    SHOTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=SHOTS / "run_page_on_a_phone.png", full_page=True)
    await page.set_viewport_size(DESKTOP)

    # Run again: the same proposal is suppressed, with the pending one it matched linked.
    sid = await gw.seed(comment="still too long")
    llm.reply(answer(proposal(based_on=[sid])))
    await page.goto(url(gw, "/admin/runs"))
    await page.click("#run-now")
    matched = page.locator("#run-suppressed a")
    await expect(matched).to_have_text(re.compile(r"proposal #\d+"))
    await matched.click()
    await expect(page.locator("h1")).to_contain_text("chat-brevity")

    # While another pass holds the lock, the button answers with a kind 409.
    assert await gw.parts.store.acquire_lock(LOCK_NAME, "elsewhere", time.time(), 60)
    await page.goto(url(gw, "/admin/runs"))
    await expect(page.locator("#run-now")).to_be_disabled()
    await page.evaluate("document.querySelector('#run-now').disabled = false")
    async with page.expect_response(lambda r: r.request.method == "POST") as posted:
        await page.click("#run-now")
    assert (await posted.value).status == 409
    await expect(page.locator("h1")).to_have_text("A pass is running")
    await gw.parts.store.release_lock(LOCK_NAME, "elsewhere")


def round_steps(labels: list[str]) -> bool:
    """Ticks from 0 in equal steps of 1, 2, 2.5 or 5 times a power of ten (500, 1k, 1.5k)."""
    units = {"k": 1e3, "M": 1e6}
    values = [float(t[:-1]) * units[t[-1]] if t[-1] in units else float(t) for t in labels]
    step = values[1] - values[0]
    mantissa = step / 10 ** math.floor(math.log10(step))
    equal = all(math.isclose(b - a, step) for a, b in itertools.pairwise(values))
    return values[0] == 0 and equal and any(math.isclose(mantissa, m) for m in (1, 2, 2.5, 5))


async def test_the_console_reads_well_on_a_phone_and_at_a_desk(
    page: Page, gw: Gateway, llm: FakeOpenAI
) -> None:
    """Tabs in two rows at 390 px with a proposal waiting; the usage chart's labels no larger
    than the page's text, on round ticks; the phone's diff header reads old, new."""
    ids = await seed_proposals(gw, llm)
    for n, tokens in enumerate((441, 1323, 882, 97)):
        session = await current_session(gw.parts.store, "telegram", f"u{n}", f"u{n}", day_at(n), 60)
        trace = Trace(prompt_tokens=tokens - 20, completion_tokens=20, model="fake-model")
        await add_message(gw.parts.store, session.id, "assistant", "a", trace=trace, now=day_at(n))
    await sign_in(page, gw)
    SHOTS.mkdir(parents=True, exist_ok=True)
    for size in (DESKTOP, PHONE):
        width = size["width"]
        await page.set_viewport_size(size)
        await page.goto(url(gw, "/admin/usage?days=7"))
        await expect(page.locator("nav.nav .pill")).to_be_visible()  # a proposal waits
        rows = await page.evaluate(
            "new Set([...document.querySelectorAll('nav.nav a')]"
            ".map(a => Math.round(a.getBoundingClientRect().top))).size"
        )
        assert rows <= (1 if width == DESKTOP["width"] else 2), f"{rows} rows of tabs at {width}"
        sizes = await page.evaluate(
            """() => {
              const svg = document.querySelector('#usage-chart');
              const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
              return [...svg.querySelectorAll('text')].map(
                t => parseFloat(getComputedStyle(t).fontSize) * scale);
            }"""
        )
        body = await page.evaluate("parseFloat(getComputedStyle(document.body).fontSize)")
        assert sizes and all(10 <= s <= body for s in sizes), (width, body, sizes)
        ticks = await page.locator("#usage-chart text.ylabel").all_text_contents()
        assert round_steps(ticks), ticks
        await page.screenshot(path=SHOTS / f"console_usage_{width}.png", full_page=True)
        await page.goto(url(gw, f"/admin/proposals/{ids['update']}"))
        await page.screenshot(path=SHOTS / f"console_proposal_{width}.png", full_page=True)
    heads = await page.locator("table.diff-unified thead th").all_inner_texts()
    assert [h.strip() for h in heads] == ["old", "new", ""], heads
    await page.set_viewport_size(DESKTOP)
