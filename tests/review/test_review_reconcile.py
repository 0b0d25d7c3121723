"""Start-up reconciliation: whatever step a crash interrupted, rows and files agree afterwards."""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from gateway.config import Settings
from gateway.review.proposals import Proposal
from gateway.review.staging import Staging, render_proposal
from gateway.skills.library import SkillLibrary, content_hash, parse_skill
from gateway.store import SqliteStore
from tests.fakes.openai_server import FakeOpenAI
from tests.synthesis_support import answer, gateway, proposal, synth_settings

WRITING = "writing-for-chat"
NEW_BODY = "# Writing for chat\n\nThree sentences at most."


async def pending_proposal(
    settings: Settings, fake_llm: FakeOpenAI, made: dict[str, object]
) -> int:
    """Run one pass in a gateway that then stops; returns the pending proposal's id."""
    async with gateway(settings) as gw:
        await gw.seed()
        fake_llm.reply(answer(made))
        (p,) = (await gw.synthesize())["proposed"]
        assert p["status"] == "pending"
        return int(p["id"])


async def claim(settings: Settings, pid: int) -> Proposal:
    """The first step of an approval: the decision, claimed in the database."""
    async with SqliteStore(settings.db_path) as store:
        assert await store.transition(
            pid, from_status="pending", to_status="approved", by="web", at=time.time()
        )
        p = await store.get_proposal(pid)
    assert p is not None
    return p


async def test_a_crash_between_the_rename_and_the_registry_update_is_finished_at_start_up(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    pid = await pending_proposal(
        settings, fake_llm, proposal(WRITING, kind="update", target=WRITING, content=NEW_BODY)
    )
    p = await claim(settings, pid)
    # The file step of the approval ran; the process died before the registry update.
    library = SkillLibrary(settings.skills_dir)
    Staging(library).promote(WRITING, render_proposal(p, library.read(WRITING), "bundled"))

    async with gateway(settings) as gw:
        live_text = (gw.skills_dir / WRITING / "SKILL.md").read_text()
        assert gw.parts.catalog.load(WRITING) == NEW_BODY
        _, skills = await gw.call("GET", "/skills")
        row = {s["name"]: s for s in skills}[WRITING]
        assert row["review_status"] == "approved" and row["enabled"]
        assert row["source"] == "bundled" and row["content_hash"] == content_hash(live_text)
        _, detail = await gw.call("GET", f"/proposals/{pid}")
        assert detail["status"] == "approved" and detail["decided_by"] == "web"
        assert not (gw.skills_dir / WRITING / "SKILL.md.proposed").exists()


async def test_a_rename_whose_row_still_says_pending_is_recorded_as_approved(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    pid = await pending_proposal(settings, fake_llm, proposal("chat-brevity"))
    folder = settings.skills_dir / "chat-brevity"
    os.replace(folder / "SKILL.md.proposed", folder / "SKILL.md")

    async with gateway(settings) as gw:
        _, detail = await gw.call("GET", f"/proposals/{pid}")
        assert detail["status"] == "approved" and detail["decided_by"] == "reconcile"
        _, skills = await gw.call("GET", "/skills")
        row = {s["name"]: s for s in skills}["chat-brevity"]
        # Automation's skill, not mistaken for one an operator dropped in.
        assert row["source"] == "auto" and row["enabled"] and row["review_status"] == "approved"
        assert gw.parts.catalog.load("chat-brevity") is not None


async def test_a_claimed_approval_whose_rename_never_happened_is_promoted_or_made_stale(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    promote = await pending_proposal(settings, fake_llm, proposal("chat-brevity"))
    await claim(settings, promote)
    moved_on = await pending_proposal(
        settings, fake_llm, proposal(WRITING, kind="update", target=WRITING, content=NEW_BODY)
    )
    await claim(settings, moved_on)
    live = settings.skills_dir / WRITING / "SKILL.md"
    edited = live.read_text() + "\nEdited by hand meanwhile.\n"
    live.write_text(edited)

    async with gateway(settings) as gw:
        brevity = parse_skill((gw.skills_dir / "chat-brevity" / "SKILL.md").read_text())
        assert brevity.metadata["proposal"] == promote
        assert brevity.metadata["approved_by"] == "web"
        assert not (gw.skills_dir / "chat-brevity" / "SKILL.md.proposed").exists()
        assert gw.parts.catalog.load("chat-brevity") == brevity.body
        _, detail = await gw.call("GET", f"/proposals/{moved_on}")
        assert detail["status"] == "stale"
        assert live.read_text() == edited
        assert not (gw.skills_dir / WRITING / "SKILL.md.proposed").exists()


async def test_an_orphaned_staged_file_is_removed_when_nothing_else_needed_repair(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    pid = await pending_proposal(
        settings, fake_llm, proposal(WRITING, kind="update", target=WRITING, content=NEW_BODY)
    )
    staged = settings.skills_dir / WRITING / "SKILL.md.proposed"
    kept = staged.read_text()
    orphan = settings.skills_dir / "summarize-text" / "SKILL.md.proposed"
    orphan.write_text("left over from a rejection whose file removal never ran")

    async with gateway(settings) as gw:
        assert not orphan.exists() and (orphan.parent / "SKILL.md").exists()
        assert staged.read_text() == kept  # the pending proposal's own is left alone
        _, detail = await gw.call("GET", f"/proposals/{pid}")
        assert detail["status"] == "pending"


async def test_staged_files_are_restored_for_pending_rows_and_removed_when_orphaned(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    pid = await pending_proposal(
        settings, fake_llm, proposal(WRITING, kind="update", target=WRITING, content=NEW_BODY)
    )
    staged = settings.skills_dir / WRITING / "SKILL.md.proposed"
    staged.unlink()
    orphan = settings.skills_dir / "summarize-text" / "SKILL.md.proposed"
    orphan.write_text("left over from a rejection whose file removal never ran")
    lonely = settings.skills_dir / "half-created" / "SKILL.md.proposed"
    lonely.parent.mkdir()
    lonely.write_text("a create nobody owns")

    async with gateway(settings) as gw:
        restaged = parse_skill(staged.read_text())
        assert restaged.body == NEW_BODY and restaged.metadata["proposal"] == pid
        assert not orphan.exists() and (orphan.parent / "SKILL.md").exists()
        assert not lonely.parent.exists()
        _, detail = await gw.call("GET", f"/proposals/{pid}")
        assert detail["status"] == "pending"
