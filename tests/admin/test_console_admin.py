"""Admin tools over HTTP and in the terminal: named admins, skills switched by hand, rollback,
the run page, the next scheduled pass and Markdown rendered safely."""

from __future__ import annotations

import io
import logging
import re
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path

import pytest

from gateway.admin import console_auth
from gateway.config import Settings, load_settings
from gateway.errors import ConfigError
from gateway.logs import setup_logging
from gateway.skills.library import parse_skill
from gateway.synthesis.synthesizer import LOCK_NAME
from tests.console_support import NEW_WRITING, WRITING, csrf_of, seed_proposals, seed_rated_answer
from tests.console_support import sign_in as console_sign_in
from tests.fakes.openai_server import FakeOpenAI
from tests.serve_process import skillgate
from tests.synthesis_support import answer, gateway, proposal, synth_settings

ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-fedcba9876543210"
NAMED = f"alice:{ALICE}, bob:{BOB}"
CUSTOM = "house-notes"
CUSTOM_TEXT = (
    "---\nname: house-notes\n"
    "description: 'Notes the operator wrote by hand: use for house rules.'\n"
    "---\n\n# House notes\n\n- Quiet hours start at 22:00.\n"
)


def write_custom_skill(settings: Settings) -> Path:
    path = settings.skills_dir / CUSTOM / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(CUSTOM_TEXT)
    return path


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_named_admin_tokens_are_parsed_checked_and_never_echoed() -> None:
    settings = load_settings(_env_file=None, admin_token="single-token", admin_tokens=NAMED)
    assert settings.admins() == {"alice": ALICE, "bob": BOB, "": "single-token"}
    assert {ALICE, BOB, "single-token"} <= set(settings.gateway_secrets())
    for bad, why in (
        ("alice", "entry 1 is not name:token"),
        (f"Alice:{ALICE}", "entry 1: an admin name"),
        (f"alice:{ALICE},alice:{BOB}", "admin alice is named twice"),
        (f"alice:{ALICE},bob:{ALICE}", "admin bob has the same token as another admin"),
    ):
        with pytest.raises(ConfigError) as caught:
            load_settings(_env_file=None, SKILLGATE_ADMIN_TOKENS=bad)
        assert "SKILLGATE_ADMIN_TOKENS" in str(caught.value) and why in str(caught.value)
        assert ALICE not in str(caught.value) and BOB not in str(caught.value)


@pytest.fixture
def log_lines() -> Iterator[Callable[[Settings], io.StringIO]]:
    """The gateway's own logging (with its masking) into a buffer; pytest's back afterwards."""
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)

    def install(settings: Settings) -> io.StringIO:
        stream = io.StringIO()
        setup_logging("INFO", settings.gateway_secrets(), "text", stream)
        return stream

    yield install
    root.handlers[:], root.level = saved


async def test_a_console_decision_records_the_named_admin_who_made_it(
    make_settings: Callable[..., Settings],
    fake_llm: FakeOpenAI,
    log_lines: Callable[[Settings], io.StringIO],
) -> None:
    settings = synth_settings(make_settings, fake_llm, admin_tokens=NAMED)
    lines = log_lines(settings)
    async with gateway(settings) as gw:
        ids = await seed_proposals(gw, fake_llm)
        csrf = await console_sign_in(gw.client, ALICE)
        logging.getLogger("gateway.test").warning("a token pasted into a log line: %s", BOB)
        logged = lines.getvalue()
        assert "console sign-in by alice" in logged
        assert ALICE not in logged and BOB not in logged and "pasted into a log line" in logged
        page = await (await gw.client.get("/admin/proposals")).text()
        assert "Signed in as <strong>alice</strong>" in page
        resp = await gw.client.post(
            f"/admin/proposals/{ids['create']}/approve", data={"csrf": csrf}
        )
        assert resp.status == 200
        _, approved = await gw.call("GET", f"/proposals/{ids['create']}")
        assert approved["decided_by"] == "web:alice"

        # The admin API knows the bearer's name too; the single token stays plain "web".
        resp = await gw.client.post(
            f"/admin/api/proposals/{ids['update']}/reject",
            json={"reason": "keep the lists"},
            headers=bearer(BOB),
        )
        assert resp.status == 200
        assert (await resp.json())["proposal"]["decided_by"] == "web:bob"
        wrong = await gw.client.get("/admin/api/proposals", headers=bearer("bob-token-guess"))
        assert wrong.status == 401

        # A cookie signed for one admin cannot be relabelled as another.
        key = console_auth.console_key(ALICE)
        forged = console_auth.issue_session(key, admin="alice").replace(".alice.", ".bob.")
        resp = await gw.client.get(
            "/admin/feedback", cookies={console_auth.COOKIE: forged}, allow_redirects=False
        )
        assert resp.status == 303


async def test_a_custom_skill_is_disabled_and_enabled_by_hand_and_its_file_never_changes(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm, admin_tokens=NAMED)
    path = write_custom_skill(settings)
    async with gateway(settings) as gw:
        catalog = gw.parts.catalog
        assert CUSTOM in catalog.enabled
        resp = await gw.client.post(
            f"/admin/api/skills/{CUSTOM}/disable",
            json={"reason": "quiet hours changed"},
            headers=bearer(BOB),
        )
        body = await resp.json()
        assert resp.status == 200, body
        assert (body["enabled"], body["by"], body["reason"]) == (
            False,
            "web:bob",
            "quiet hours changed",
        )
        assert CUSTOM not in catalog.enabled
        _, listed = await gw.call("GET", "/skills")
        [row] = [s for s in listed if s["name"] == CUSTOM]
        assert (row["enabled"], row["source"]) == (False, "custom")
        assert row["switched"] == {
            "enabled": False,
            "by": "web:bob",
            "reason": "quiet hours changed",
            "at": row["switched"]["at"],
        }
        assert path.read_text() == CUSTOM_TEXT

        # The console: the skill page says who switched it off and why, and switches it on.
        csrf = await console_sign_in(gw.client, ALICE)
        page = await (await gw.client.get(f"/admin/skills/{CUSTOM}")).text()
        assert "Disabled by <strong>web:bob</strong>" in page and "quiet hours changed" in page
        assert f'action="/admin/skills/{CUSTOM}/enable"' in page
        resp = await gw.client.post(
            f"/admin/skills/{CUSTOM}/enable", data={"csrf": csrf, "reason": "fixed"}
        )
        assert resp.status == 200 and resp.url.path == f"/admin/skills/{CUSTOM}"
        page = await resp.text()
        assert "is offered again" in page and "Enabled by <strong>web:alice</strong>" in page
        assert CUSTOM in catalog.enabled
        switches = await gw.parts.store.skill_switches(CUSTOM)
        assert [(w.enabled, w.switched_by, w.reason) for w in switches] == [
            (True, "web:alice", "fixed"),
            (False, "web:bob", "quiet hours changed"),
        ]
        assert path.read_text() == CUSTOM_TEXT

        missing = await gw.call("POST", "/skills/no-such-skill/disable")
        assert missing[0] == 404 and "no registered skill no-such-skill" in missing[1]["error"]
        assert (await gw.call("POST", "/skills/Bad_Name/disable"))[0] == 400
        garbled = await gw.client.post(
            f"/admin/api/skills/{CUSTOM}/disable",
            data=b"{not json",
            headers={**bearer(ALICE), "Content-Type": "application/json"},
        )
        assert garbled.status == 400
        assert CUSTOM in catalog.enabled


async def test_skills_disable_enable_and_proposals_rollback_in_the_terminal(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    path = write_custom_skill(settings)
    async with gateway(settings) as gw:
        ids = await seed_proposals(gw, fake_llm)
        live = gw.skills_dir / WRITING / "SKILL.md"
        before = live.read_text()
        status, _ = await gw.call("POST", f"/proposals/{ids['update']}/approve")
        assert status == 200
        assert parse_skill(live.read_text()).body.strip() == NEW_WRITING
    env = {"SKILLGATE_DATA_DIR": str(settings.data_dir)}

    code, out, err = await skillgate(
        "skills", "disable", CUSTOM, "--reason", "outdated rules", env=env
    )
    assert code == 0, err
    assert out.strip() == f"{CUSTOM} is disabled (outdated rules); its files are unchanged"
    code, out, _ = await skillgate("skills", "list", env=env)
    assert f"{CUSTOM} — custom, disabled" in out
    code, out, err = await skillgate("skills", "enable", CUSTOM, env=env)
    assert (code, out.strip()) == (0, f"{CUSTOM} is enabled; its files are unchanged"), err
    code, _, err = await skillgate("skills", "disable", "no-such-skill", env=env)
    assert code == 1 and "no registered skill no-such-skill" in err
    assert path.read_text() == CUSTOM_TEXT

    code, out, err = await skillgate(
        "proposals", "rollback", str(ids["update"]), "--reason", "answers got worse", env=env
    )
    assert code == 0, err
    assert out.strip() == f"rolled back #{ids['update']}: {WRITING} is back to the text it replaced"
    assert live.read_text() == before
    code, _, err = await skillgate("proposals", "rollback", str(ids["update"]), env=env)
    assert code == 1 and "not an approved update or retirement (rolled_back)" in err

    async with gateway(settings) as gw:
        _, rolled = await gw.call("GET", f"/proposals/{ids['update']}")
        assert rolled["status"] == "rolled_back" and rolled["reason"] == "answers got worse"
        assert rolled["decided_by"].startswith("cli:")
        switches = await gw.parts.store.skill_switches(CUSTOM)
        assert [(w.enabled, w.reason) for w in switches] == [
            (True, None),
            (False, "outdated rules"),
        ]
        assert all(w.switched_by.startswith("cli:") for w in switches)


async def test_a_run_page_lists_what_it_proposed_suppressed_and_refused(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with gateway(synth_settings(make_settings, fake_llm)) as gw:
        ids = await seed_proposals(gw, fake_llm)
        sid = await gw.seed()
        fake_llm.reply(
            answer(
                proposal(based_on=[sid]),  # the same as pending chat-brevity: suppressed
                proposal("Not A Slug", based_on=[sid]),  # refused: a bad name
            )
        )
        run = await gw.synthesize()
        rid = run["run_id"]
        status, detail = await gw.call("GET", f"/runs/{rid}")
        assert status == 200 and detail["proposals"] == []
        assert detail["suppressed_items"] == [
            {
                "name": "chat-brevity",
                "reason": f"repeats proposal #{ids['create']} (chat-brevity), which awaits review",
                "matched": ids["create"],
                "matched_skill": None,
                "detail": "the same text",
            }
        ]
        [refused] = detail["refused_items"]
        assert refused["name"] == "Not A Slug"
        assert (await gw.call("GET", "/runs/99999"))[0] == 404

        await console_sign_in(gw.client)
        page = await (await gw.client.get(f"/admin/runs/{rid}")).text()
        suppressed = page.split('id="run-suppressed"')[1].split("</section>")[0]
        assert (
            f'Matched <a href="/admin/proposals/{ids["create"]}">proposal #{ids["create"]}</a>'
            in suppressed
        )
        assert "(create chat-brevity, pending)" in suppressed
        refused_html = page.split('id="run-refused"')[1].split("</section>")[0]
        assert (
            "Not A Slug" in refused_html
            and "invalid skill name &#39;Not A Slug&#39;" in refused_html
        )
        first = await (await gw.client.get(f"/admin/runs/{ids['run']}")).text()
        proposed = first.split('id="run-proposed"')[1].split("</section>")[0]
        for pid in (ids["create"], ids["update"]):
            assert f'href="/admin/proposals/{pid}"' in proposed
        assert (await gw.client.get("/admin/runs/0")).status == 404
        listing = await (await gw.client.get("/admin/runs")).text()
        assert f'href="/admin/runs/{rid}"' in listing
        assert "No scheduled passes" in listing


async def test_run_synthesis_now_shows_the_run_and_a_kind_409_while_one_runs(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm, synthesis_interval_minutes=90)
    async with gateway(settings) as gw:
        started = time.time()
        csrf = await console_sign_in(gw.client)
        listing = await (await gw.client.get("/admin/runs")).text()
        assert "Next scheduled pass:" in listing
        # With no run before, the schedule counts from start-up: about 90 minutes on.
        [iso] = re.findall(r'id="next-pass">Next scheduled pass: <time datetime="([^"]+)"', listing)
        at = datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()
        assert started + 89 * 60 <= at <= time.time() + 90 * 60

        sid = await gw.seed()
        fake_llm.reply(answer(proposal(based_on=[sid])))
        resp = await gw.client.post("/admin/runs", data={"csrf": csrf})
        assert resp.status == 200 and resp.url.path.startswith("/admin/runs/")
        page = await resp.text()
        assert "console" in page and "chat-brevity" in page

        assert await gw.parts.store.acquire_lock(LOCK_NAME, "elsewhere", time.time(), 60)
        busy = await gw.client.post("/admin/runs", data={"csrf": csrf})
        assert busy.status == 409
        assert "Another synthesis pass is running right now" in await busy.text()
        listing = await (await gw.client.get("/admin/runs")).text()
        assert "A pass is running…" in listing
        refused = await gw.client.post("/admin/runs", data={"csrf": "wrong"})
        assert refused.status == 403


async def test_markdown_is_rendered_without_raw_html_in_transcripts_downvotes_and_skills(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with gateway(synth_settings(make_settings, fake_llm)) as gw:
        text = (
            "**Bold** step, then [the docs](https://example.org/guide)"
            ' <script>alert(1)</script> <img src=x onerror="alert(2)">'
            " [bad](javascript:alert(3))"
        )
        sid, _ = await seed_rated_answer(
            gw.parts.store, at=time.time(), rating=-1, answer_text=text, comment="*too* long"
        )
        await console_sign_in(gw.client)
        for path in (f"/admin/conversations/{sid}", "/admin/feedback"):
            page = await (await gw.client.get(path)).text()
            assert "<strong>Bold</strong>" in page, path
            assert (
                '<a href="https://example.org/guide" rel="noopener nofollow">the docs</a>' in page
            )
            assert "<script>alert(1)</script>" not in page and "&lt;script&gt;" in page
            assert "<img" not in page and 'href="javascript:' not in page
            assert "<em>too</em> long" in page
        skill = await (await gw.client.get(f"/admin/skills/{WRITING}")).text()
        body = skill.split('id="skill-body"')[1].split("</div>")[0]
        assert "<h1>Writing for a chat screen</h1>" in body and "<li>" in body
        assert "description:" not in body  # the frontmatter is not part of the rendered body


async def test_the_csrf_form_token_differs_per_admin(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm, admin_tokens=NAMED)
    async with gateway(settings) as gw:
        alice = await console_sign_in(gw.client, ALICE)
        page = await (await gw.client.get("/admin/skills")).text()
        assert csrf_of(page) == alice
        gw.client.session.cookie_jar.clear()
        bob = await console_sign_in(gw.client, BOB)
        assert bob != alice
        resp = await gw.client.post(f"/admin/skills/{WRITING}/disable", data={"csrf": alice})
        assert resp.status == 403
        assert WRITING in gw.parts.catalog.enabled
