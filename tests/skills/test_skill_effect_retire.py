"""Retirement through review: approve disables, rollback enables, refusals are remembered."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import pytest

from gateway.cli.synthesize import print_summary
from gateway.config import Settings
from gateway.core.models import ChatRef, IncomingMessage
from gateway.skills.effect import wilson
from gateway.store import SqliteStore
from gateway.synthesis.synthesizer import ProposalBrief, RunSummary
from tests.effect_support import (
    BIKE,
    BIKE_DESCRIPTION,
    CRISP,
    KITCHEN,
    KITCHEN_DESCRIPTION,
    RAMBLE,
    plant,
    seed_many,
    skill_text,
)
from tests.fakes.openai_server import FakeOpenAI
from tests.synthesis_support import (
    Gateway,
    answer,
    evidence_prompt,
    gateway,
    proposal,
    synth_settings,
)

ASK = IncomingMessage(chat=ChatRef(channel="telegram", chat_id="a", user_id="u"), text="Soup?")


@pytest.fixture
def settings(make_settings: Callable[..., Settings], fake_llm: FakeOpenAI) -> Settings:
    fake_llm.default = lambda body: json.dumps({"proposals": []})
    return synth_settings(make_settings, fake_llm)


async def make_harmful(gw: Gateway, name: str = KITCHEN) -> None:
    """20 rated answers that loaded it (4 👍), 20 comparable ones without it (16 👍)."""
    await seed_many(gw.parts.store, 20, 4, loaded=[name])
    await seed_many(gw.parts.store, 20, 16, offered=[name])


async def retire_made(gw: Gateway) -> dict[str, object]:
    run = await gw.synthesize()
    (made,) = [p for p in run["proposed"] if p["kind"] == "retire"]
    return dict(made)


async def skill_row(gw: Gateway, name: str) -> dict[str, object]:
    _, listed = await gw.call("GET", "/skills")
    return dict({s["name"]: s for s in listed}[name])


async def test_a_retirement_is_reviewed_disables_the_skill_and_a_rollback_brings_it_back(
    settings: Settings, fake_llm: FakeOpenAI
) -> None:
    await plant(settings, KITCHEN, KITCHEN_DESCRIPTION, RAMBLE)
    live = settings.skills_dir / KITCHEN / "SKILL.md"
    text = live.read_text()
    async with gateway(settings) as gw:
        await make_harmful(gw)
        made = await retire_made(gw)
        assert (made["target"], made["status"]) == (KITCHEN, "pending")

        # Until a person decides, the skill stays in use and nothing is staged.
        assert gw.parts.catalog.load(KITCHEN) == RAMBLE
        assert sorted(p.name for p in live.parent.iterdir()) == ["SKILL.md"]
        status, detail = await gw.call("GET", f"/proposals/{made['id']}")
        assert status == 200 and detail["kind"] == "retire" and detail["content"] == RAMBLE
        assert detail["diff"].startswith(f"retire {KITCHEN}: the skill is disabled")
        assert "rated 👍 4 of 20 (20%" in detail["rationale"]
        assert "without it 16 of 20 (80%" in detail["rationale"]
        assert len(detail["based_on"]) == 20  # the sessions whose ratings count against it

        # The model is told a retirement waits, so it proposes nothing that collides with it.
        await gw.seed()
        run = await gw.synthesize()
        assert (
            run["suppressed"][0]["reason"] == f"proposal #{made['id']} for {KITCHEN} awaits review"
        )
        waiting = f"- {KITCHEN} (retirement of {KITCHEN}: to be disabled): {KITCHEN_DESCRIPTION}"
        assert waiting in evidence_prompt(fake_llm.requests[-1])

        row = await skill_row(gw, KITCHEN)
        assert row["pending_proposal"] == made["id"]
        effect = row["effect"]
        assert isinstance(effect, dict)
        assert (effect["uses"], effect["up"], effect["down"]) == (20, 4, 16)
        low, high = wilson(4, 20)
        assert effect["rate"] == 0.2
        assert effect["low"] == pytest.approx(low, abs=1e-4)
        assert effect["high"] == pytest.approx(high, abs=1e-4)
        assert effect["offered_only"]["answers"] == 20 and effect["without"]["rate"] == 0.8
        assert effect["verdict"] == "harmful" and effect["under_evaluation"] is False
        assert effect["look"] >= 1  # reached at a look a pass took and recorded

        status, body = await gw.call("POST", f"/proposals/{made['id']}/approve")
        assert status == 200 and body["outcome"] == "approved"
        assert gw.parts.catalog.load(KITCHEN) is None
        assert live.read_text() == text  # the files are kept
        row = await skill_row(gw, KITCHEN)
        assert (row["enabled"], row["review_status"]) == (False, "retired")
        fake_llm.reply("Soup: leeks, potatoes, stock.")
        await gw.parts.agent.respond(ASK)
        assert f"- {KITCHEN}:" not in fake_llm.system_prompt()

        status, body = await gw.call(
            "POST", f"/proposals/{made['id']}/rollback", {"reason": "the cooks like stories"}
        )
        assert status == 200 and body["proposal"]["status"] == "rolled_back"
        assert gw.parts.catalog.load(KITCHEN) == RAMBLE
        row = await skill_row(gw, KITCHEN)
        assert (row["enabled"], row["review_status"]) == (True, "rolled_back")
        assert (await gw.call("POST", f"/proposals/{made['id']}/rollback"))[0] == 409

        # The figures still say harmful, but a person has overruled the retirement.
        run = await gw.synthesize()
        assert [p["kind"] for p in run["proposed"]] == []
        assert run["suppressed"] == [
            {
                "name": KITCHEN,
                "reason": f"matches refused retirement #{made['id']}: the cooks like stories",
                "matched": made["id"],
                "matched_skill": None,
                "detail": None,
            }
        ]


async def test_a_rejected_retirement_is_not_proposed_again_after_a_restart(
    settings: Settings,
) -> None:
    await plant(settings, KITCHEN, KITCHEN_DESCRIPTION, RAMBLE)
    async with gateway(settings) as gw:
        await make_harmful(gw)
        made = await retire_made(gw)
        status, _ = await gw.call(
            "POST", f"/proposals/{made['id']}/reject", {"reason": "a seasonal dip"}
        )
        assert status == 200
        assert gw.parts.catalog.load(KITCHEN) == RAMBLE

    async with gateway(settings) as gw:
        # More evidence of the same kind, short of twice the 16 👎 it was refused on.
        await seed_many(gw.parts.store, 10, 2, loaded=[KITCHEN])
        run = await gw.synthesize()
        assert run["proposed"] == []
        assert [s["reason"] for s in run["suppressed"]] == [
            f"matches refused retirement #{made['id']}: a seasonal dip"
        ]
        # Twice the evidence against (40 👎 against 16): the reviewer is asked again.
        await make_harmful(gw)
        again = await retire_made(gw)
        assert again["id"] != made["id"] and again["name"] == KITCHEN
        status, _ = await gw.call("POST", f"/proposals/{again['id']}/reject", {"reason": "no"})
        assert status == 200

    # A new text is a new claim: measured from scratch, and proposed when it is harmful too.
    live = settings.skills_dir / KITCHEN / "SKILL.md"
    live.write_text(skill_text(KITCHEN, KITCHEN_DESCRIPTION, RAMBLE + "\nAnd a second story."))
    async with gateway(settings) as gw:
        assert (await gw.parts.synthesizer.effects())[KITCHEN].loaded.answers == 0
        await make_harmful(gw)
        again = await retire_made(gw)
        assert again["id"] != made["id"] and again["status"] == "pending"


async def test_without_required_approval_only_automations_own_skills_are_retired_at_once(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.default = lambda body: json.dumps({"proposals": []})
    settings = synth_settings(make_settings, fake_llm, require_approval=False)
    await plant(settings, KITCHEN, KITCHEN_DESCRIPTION, RAMBLE, source="auto")
    await plant(settings, BIKE, BIKE_DESCRIPTION, CRISP)  # a person's own skill
    async with gateway(settings) as gw:
        await make_harmful(gw, KITCHEN)
        await make_harmful(gw, BIKE)
        run = await gw.synthesize()
        made = {p["target"]: p["status"] for p in run["proposed"]}
        assert made == {KITCHEN: "applied", BIKE: "pending"}
        assert gw.parts.catalog.load(KITCHEN) is None
        assert gw.parts.catalog.load(BIKE) == CRISP
        assert (await skill_row(gw, KITCHEN))["review_status"] == "retired"
        # Retirements do not use up the proposals the model may make in a pass.
        assert len(run["proposed"]) == 2 and settings.max_proposals_per_run == 3

        # An improved text of a retired skill, once approved, brings the skill back.
        await gw.seed(loaded=[KITCHEN])
        fake_llm.reply(answer(proposal(KITCHEN, kind="update", target=KITCHEN, content=CRISP)))
        (update,) = (await gw.synthesize())["proposed"]
        assert (update["kind"], update["status"]) == ("update", "applied")
        assert gw.parts.catalog.load(KITCHEN) == CRISP
        row = await skill_row(gw, KITCHEN)
        assert row["enabled"] is True and row["effect"]["uses"] == 0  # a new text, measured anew


async def test_a_retirement_approved_just_before_a_crash_is_finished_at_start(
    settings: Settings,
) -> None:
    await plant(settings, KITCHEN, KITCHEN_DESCRIPTION, RAMBLE)
    async with gateway(settings) as gw:
        await make_harmful(gw)
        pid = int(str((await retire_made(gw))["id"]))
    async with SqliteStore(settings.db_path) as store:  # the decision was claimed, nothing more
        assert await store.transition(
            pid, from_status="pending", to_status="approved", by="web", at=time.time()
        )
    async with gateway(settings) as gw:
        assert gw.parts.catalog.load(KITCHEN) is None
        p = await gw.parts.store.get_proposal(pid)
        assert p is not None and p.status == "approved" and p.promoted_at is not None
        assert (settings.skills_dir / KITCHEN / "SKILL.md").is_file()
        assert not (settings.skills_dir / KITCHEN / "SKILL.md.proposed").exists()


def test_the_command_line_names_a_retirement_as_such(capsys: pytest.CaptureFixture[str]) -> None:
    summary = RunSummary(
        run_id=3,
        status="ok",
        trigger="cli",
        proposed=[
            ProposalBrief(
                id=7,
                kind="retire",
                name=KITCHEN,
                target=KITCHEN,
                description=KITCHEN_DESCRIPTION,
                status="pending",
            )
        ],
    )
    print_summary(summary)
    first = capsys.readouterr().out.splitlines()[0]
    assert first == (
        f"proposed #7 {KITCHEN} (retirement of {KITCHEN}, waiting for review): "
        f"{KITCHEN_DESCRIPTION}"
    )
