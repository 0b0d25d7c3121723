"""Approval policy: with approval off, automation changes only what automation wrote."""

from __future__ import annotations

from collections.abc import Callable

from gateway.config import Settings
from gateway.skills.library import parse_skill
from tests.fakes.openai_server import FakeOpenAI
from tests.synthesis_support import answer, gateway, proposal, synth_settings

MINE = "---\nname: house-style\ndescription: Our own house style for answers.\n---\n\nBe kind.\n"


async def test_without_required_approval_only_auto_skills_change_at_once(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm, require_approval=False)
    # A skill an operator dropped in is theirs (`custom`).
    (settings.skills_dir / "house-style").mkdir(parents=True)
    (settings.skills_dir / "house-style" / "SKILL.md").write_text(MINE)
    async with gateway(settings) as gw:
        await gw.seed()
        fake_llm.reply(
            answer(
                proposal("chat-brevity"),
                proposal("house-style", kind="update", target="house-style", content="Be terse."),
                proposal(
                    "writing-for-chat", kind="update", target="writing-for-chat", content="Terse."
                ),
            )
        )
        run = await gw.synthesize()
        status = {p["name"]: p["status"] for p in run["proposed"]}
        assert status == {
            "chat-brevity": "applied",
            "house-style": "pending",
            "writing-for-chat": "pending",
        }
        assert (gw.skills_dir / "house-style" / "SKILL.md").read_text() == MINE
        applied = parse_skill((gw.skills_dir / "chat-brevity" / "SKILL.md").read_text())
        assert applied.metadata["source"] == "auto" and applied.metadata["review"] == "applied"
        assert applied.metadata["approved_by"] == "auto"
        assert gw.parts.catalog.load("chat-brevity") == applied.body

        # A later update of the skill automation wrote is applied as well, and kept for rollback.
        await gw.seed()
        fake_llm.reply(
            answer(proposal("chat-brevity", kind="update", target="chat-brevity", content="Two."))
        )
        (update,) = (await gw.synthesize())["proposed"]
        assert update["status"] == "applied"
        assert gw.parts.catalog.load("chat-brevity") == "Two."
        _, skills = await gw.call("GET", "/skills")
        row = {s["name"]: s for s in skills}["chat-brevity"]
        assert row["review_status"] == "applied" and row["last_approved"]["by"] == "auto"
        status_code, _ = await gw.call("POST", f"/proposals/{update['id']}/rollback")
        assert status_code == 200
        assert gw.parts.catalog.load("chat-brevity") == applied.body


async def test_with_required_approval_even_automations_own_skills_wait(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    async with gateway(settings) as gw:
        await gw.seed()
        fake_llm.reply(answer(proposal("chat-brevity")))
        (made,) = (await gw.synthesize())["proposed"]
        assert made["status"] == "pending"
        assert not (gw.skills_dir / "chat-brevity" / "SKILL.md").exists()
