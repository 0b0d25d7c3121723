"""Propose, approve, reject, roll back: the review loop through the admin API."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import yaml

from gateway.config import Settings
from gateway.skills.library import parse_skill
from tests.fakes.openai_server import FakeOpenAI
from tests.synthesis_support import (
    AUTH,
    answer,
    evidence_prompt,
    gateway,
    proposal,
    synth_settings,
)

WRITING = "writing-for-chat"
NEW_BODY = "# Writing for chat\n\nAt most three sentences.\nNo headings in chat answers."


def frontmatter(text: str) -> dict[str, object]:
    return dict(yaml.safe_load(text.split("---")[1]))


async def test_a_proposal_is_staged_beside_the_live_skill_which_stays_in_use(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    async with gateway(settings) as gw:
        live = gw.skills_dir / WRITING / "SKILL.md"
        before = live.read_bytes()
        sid = await gw.seed(loaded=[WRITING])
        fake_llm.reply(
            answer(
                proposal(
                    WRITING,
                    kind="update",
                    target=WRITING,
                    description="How to write answers for a chat window.",
                    content=NEW_BODY,
                    based_on=[sid, 999],
                )
            )
        )
        run = await gw.synthesize()
        assert run["status"] == "ok" and run["sessions"] == 1
        (made,) = run["proposed"]
        assert (made["kind"], made["target"], made["status"]) == ("update", WRITING, "pending")
        schema = fake_llm.requests[-1]["response_format"]["json_schema"]
        assert schema["strict"] is True and schema["schema"]["required"] == ["proposals"]

        assert live.read_bytes() == before  # untouched, and still what the agent loads
        assert gw.parts.catalog.load(WRITING) == parse_skill(before.decode()).body
        staged = (gw.skills_dir / WRITING / "SKILL.md.proposed").read_text()
        meta = frontmatter(staged)["metadata"]
        assert isinstance(meta, dict)
        assert meta["proposal"] == made["id"] and meta["review"] == "pending"
        assert meta["source"] == "bundled"  # an update keeps its target's source
        assert meta["based_on"] == [sid]  # the unknown session 999 was dropped

        status, listed = await gw.call("GET", "/proposals?status=pending")
        assert status == 200 and [p["id"] for p in listed] == [made["id"]]
        status, detail = await gw.call("GET", f"/proposals/{made['id']}")
        assert status == 200
        assert detail["content"] == NEW_BODY and detail["based_on"] == [sid]
        assert detail["rationale"] == "Users rated long answers down."
        assert detail["model"] == "fake-model" and detail["generated"]
        assert f"--- {WRITING}/SKILL.md" in detail["diff"]
        assert "+No headings in chat answers." in detail["diff"]
        status, skills = await gw.call("GET", "/skills")
        assert {s["name"]: s["pending_proposal"] for s in skills}[WRITING] == made["id"]


async def test_approve_promotes_atomically_enables_and_keeps_provenance(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    async with gateway(settings) as gw:
        sid = await gw.seed()
        fake_llm.reply(answer(proposal("chat-brevity", based_on=[sid])))
        (made,) = (await gw.synthesize())["proposed"]
        folder = gw.skills_dir / "chat-brevity"
        assert sorted(p.name for p in folder.iterdir()) == ["SKILL.md.proposed"]
        assert gw.parts.catalog.load("chat-brevity") is None  # a create is not enabled yet
        _, skills = await gw.call("GET", "/skills")
        assert "chat-brevity" not in {s["name"] for s in skills}

        status, body = await gw.call("POST", f"/proposals/{made['id']}/approve")
        assert status == 200 and body["outcome"] == "approved"
        assert sorted(p.name for p in folder.iterdir()) == ["SKILL.md"]
        live = parse_skill((folder / "SKILL.md").read_text(), expect_name="chat-brevity")
        assert live.body.startswith("# Brevity")
        assert live.metadata["source"] == "auto"
        assert live.metadata["proposal"] == made["id"]
        assert live.metadata["approved_by"] == "web" and live.metadata["approved_at"]
        assert live.metadata["based_on"] == [sid] and live.metadata["model"] == "fake-model"
        # The agent sees the new skill at once.
        assert gw.parts.catalog.load("chat-brevity") == live.body
        _, skills = await gw.call("GET", "/skills")
        row = {s["name"]: s for s in skills}["chat-brevity"]
        assert row["enabled"] and row["source"] == "auto" and row["review_status"] == "approved"
        assert row["last_approved"]["proposal"] == made["id"]
        assert row["last_approved"]["by"] == "web"

        # The first decision wins; later ones change nothing and say who decided when.
        for action in ("approve", "reject"):
            status, body = await gw.call("POST", f"/proposals/{made['id']}/{action}")
            assert status == 409, body
            assert body["decided_by"] == "web" and body["decided"]
            assert body["proposal"]["status"] == "approved"
        assert (folder / "SKILL.md").is_file()


async def test_reject_writes_a_tombstone_that_outlives_a_restart(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    rejected = proposal("chat-brevity")
    async with gateway(settings) as gw:
        await gw.seed()
        fake_llm.reply(answer(rejected))
        (made,) = (await gw.synthesize())["proposed"]
        status, body = await gw.call(
            "POST", f"/proposals/{made['id']}/reject", {"reason": "we like detail"}
        )
        assert status == 200 and body["proposal"]["status"] == "rejected"
        assert body["proposal"]["reason"] == "we like detail"
        assert not (gw.skills_dir / "chat-brevity").exists()  # the create's folder went too

    # A new app and store on the same data dir: the "no" is remembered.
    async with gateway(settings) as gw:
        sid = await gw.seed()
        same_again = {
            **rejected,
            "content": "# BREVITY\n\nAnswer in at most three short  "
            "sentences.\n\nOffer details on request.",
        }
        close_claim = {
            **rejected,
            "name": "chat-brevity",
            "description": "Keep chat answers short; use when a user asks for a reminder.",
            "content": "Use short sentences only.",
        }
        different = proposal(
            "unit-conversions",
            description="Convert units for the user when they mention imperial measures.",
            content="# Units\n\nGive metric first, imperial in brackets.",
            based_on=[sid],
        )
        fake_llm.reply(answer(same_again, close_claim, different))
        run = await gw.synthesize()
        assert [p["name"] for p in run["proposed"]] == ["unit-conversions"]
        assert len(run["suppressed"]) == 2
        assert all("we like detail" in s["reason"] for s in run["suppressed"])
        prompt = evidence_prompt(fake_llm.requests[-1])
        assert "chat-brevity (new skill)" in prompt and "we like detail" in prompt

        # Everything was consumed: a second pass asks the model nothing and proposes nothing.
        asked = len(fake_llm.requests)
        again = await gw.synthesize()
        assert again["proposed"] == [] and again["sessions"] == 0
        assert len(fake_llm.requests) == asked
        status, pending = await gw.call("GET", "/proposals?status=pending")
        assert [p["name"] for p in pending] == ["unit-conversions"]


async def test_a_different_claim_about_the_same_skill_still_gets_through(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    async with gateway(settings) as gw:
        live = parse_skill((gw.skills_dir / WRITING / "SKILL.md").read_text())
        first = proposal(
            WRITING,
            kind="update",
            target=WRITING,
            description=live.description,
            content=live.body + "\n\nNever use emoji.",
        )
        second = {**first, "content": live.body + "\n\nPut the answer in the first sentence."}
        await gw.seed()
        fake_llm.reply(answer(first))
        (made,) = (await gw.synthesize())["proposed"]
        await gw.call("POST", f"/proposals/{made['id']}/reject", {"reason": "emoji are fine"})
        await gw.seed()
        fake_llm.reply(answer(first, second))
        run = await gw.synthesize()
        assert [s["reason"] for s in run["suppressed"]] == [
            f"matches rejected proposal #{made['id']}: emoji are fine"
        ]
        (kept,) = run["proposed"]
        _, detail = await gw.call("GET", f"/proposals/{kept['id']}")
        assert "first sentence" in detail["content"]


async def test_a_create_of_an_existing_name_becomes_an_update_of_it(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    async with gateway(settings) as gw:
        live = gw.skills_dir / "summarize-text" / "SKILL.md"
        before = live.read_text()
        await gw.seed()
        fake_llm.reply(answer(proposal("summarize-text", kind="create", content="# Shorter")))
        (made,) = (await gw.synthesize())["proposed"]
        assert (made["kind"], made["target"]) == ("update", "summarize-text")
        assert live.read_text() == before
        assert (live.parent / "SKILL.md.proposed").is_file()


async def test_approving_after_the_live_skill_changed_marks_the_proposal_stale(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    async with gateway(settings) as gw:
        await gw.seed()
        fake_llm.reply(answer(proposal(WRITING, kind="update", target=WRITING, content=NEW_BODY)))
        (made,) = (await gw.synthesize())["proposed"]
        live = gw.skills_dir / WRITING / "SKILL.md"
        edited = live.read_text() + "\nAn operator's own line.\n"
        live.write_text(edited)

        status, body = await gw.call("POST", f"/proposals/{made['id']}/approve")
        assert status == 409 and body["outcome"] == "stale"
        assert body["proposal"]["status"] == "stale"
        assert live.read_text() == edited
        assert not (live.parent / "SKILL.md.proposed").exists()


async def test_rollback_restores_the_version_an_approved_update_replaced(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    async with gateway(settings) as gw:
        live = gw.skills_dir / WRITING / "SKILL.md"
        original = live.read_text()
        await gw.seed()
        fake_llm.reply(answer(proposal(WRITING, kind="update", target=WRITING, content=NEW_BODY)))
        (made,) = (await gw.synthesize())["proposed"]
        assert (await gw.call("POST", f"/proposals/{made['id']}/approve"))[0] == 200
        assert gw.parts.catalog.load(WRITING) == NEW_BODY

        status, body = await gw.call(
            "POST", f"/proposals/{made['id']}/rollback", {"reason": "users preferred the old one"}
        )
        assert status == 200 and body["proposal"]["status"] == "rolled_back"
        assert live.read_text() == original
        assert gw.parts.catalog.load(WRITING) == parse_skill(original).body
        status, body = await gw.call("POST", f"/proposals/{made['id']}/rollback")
        assert status == 409


async def test_unknown_or_malformed_ids_and_bodies_are_4xx(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    async with gateway(settings) as gw:
        for raw in ("abc", "0", "-1", "1.5", "99999999999999999999999", "%C2%B2"):
            for method, path in (
                ("GET", f"/proposals/{raw}"),
                ("POST", f"/proposals/{raw}/approve"),
                ("POST", f"/proposals/{raw}/reject"),
                ("POST", f"/proposals/{raw}/rollback"),
            ):
                status, _ = await gw.call(method, path)
                assert status == 400, (method, path, status)
        for method, path in (
            ("GET", "/proposals/4242"),
            ("POST", "/proposals/4242/approve"),
            ("POST", "/proposals/4242/reject"),
            ("POST", "/proposals/4242/rollback"),
        ):
            assert (await gw.call(method, path))[0] == 404
        assert (await gw.call("GET", "/proposals?status=maybe"))[0] == 400
        await gw.seed()
        fake_llm.reply(answer(proposal()))
        (made,) = (await gw.synthesize())["proposed"]
        reject = f"/admin/api/proposals/{made['id']}/reject"
        json_type = {**AUTH, "Content-Type": "application/json"}
        for data, headers in (
            (b"{not json", json_type),
            (b'["a list"]', json_type),
            (b'{"reason": 42}', json_type),
            ({"reason": "x" * 3000}, AUTH),
        ):
            resp = await gw.client.post(reject, data=data, headers=headers)
            assert resp.status == 400, data
        # A form body works as well as JSON.
        resp = await gw.client.post(reject, data={"reason": "not now"}, headers=AUTH)
        assert resp.status == 200
        assert (await resp.json())["proposal"]["reason"] == "not now"
        assert (await gw.client.post("/admin/api/synthesize")).status == 401


async def test_concurrent_decisions_are_settled_by_the_database_first_wins(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    async with gateway(settings) as gw:
        await gw.seed()
        fake_llm.reply(answer(proposal("chat-brevity")))
        (made,) = (await gw.synthesize())["proposed"]
        review = gw.parts.review
        # Both deciders read the proposal as pending before either writes.
        approved, rejected = await asyncio.gather(
            review.approve(made["id"], "telegram:1"), review.reject(made["id"], "line:U2", "no")
        )
        outcomes = {approved.outcome, rejected.outcome}
        assert "decided" in outcomes and len(outcomes) == 2
        winner = approved if approved.outcome != "decided" else rejected
        loser = rejected if winner is approved else approved
        assert loser.proposal.decided_by == winner.proposal.decided_by
        folder = gw.skills_dir / "chat-brevity"
        if winner is approved:
            assert sorted(p.name for p in folder.iterdir()) == ["SKILL.md"]
        else:
            assert not folder.exists()
