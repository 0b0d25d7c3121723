"""A wrong rejection is not for good: an admin reopens it from chat, the console or the terminal.

Reopening is recorded with who and why, the proposal waits for review again (its staged
file back, its cards showing buttons again), and its tombstone stops suppressing the claim.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Callable

import pytest

from gateway.config import Settings
from gateway.review.proposals import PROPOSED_FILE, Candidate
from gateway.store import Store
from gateway.synthesis.similarity import body_hash
from tests.cards_support import ALICE, LINE_ADMIN, LINE_OTHER, MALLORY, Rig, fakes, rig_settings
from tests.cards_support import running as running_rig
from tests.console_support import csrf_of
from tests.console_support import sign_in as console_sign_in
from tests.fakes.openai_server import FakeOpenAI
from tests.review.test_cards_commands import say_line, tell
from tests.serve_process import skillgate
from tests.synthesis_support import answer, gateway, proposal, seed_session, synth_settings


@pytest.fixture
async def rig(make_settings: Callable[..., Settings], fake_llm: FakeOpenAI) -> AsyncIterator[Rig]:
    async with fakes() as (telegram, line):
        settings = rig_settings(make_settings, fake_llm, telegram, line)
        async with running_rig(settings, telegram, line, fake_llm) as running:
            yield running


async def test_an_admin_reopens_a_rejection_in_telegram_and_the_cards_get_their_buttons_back(
    rig: Rig,
) -> None:
    pid = await rig.propose()
    card = copy.deepcopy(rig.cards_in(ALICE)[0])
    await rig.press(card, "Reject", user_id=ALICE)
    await rig.idle()
    assert "reply_markup" not in rig.cards_in(ALICE)[0]
    assert (await rig.api("GET", f"/proposals/{pid}"))[1]["status"] == "rejected"

    said = await tell(rig, ALICE, f"/reopen {pid} rejected by mistake")
    assert said == [
        f"↩️ Reopened proposal #{pid} (chat-brevity) because: rejected by mistake. It waits for"
        " review again."
    ]
    _, shown = await rig.api("GET", f"/proposals/{pid}")
    assert shown["status"] == "pending" and shown["reopened_by"] == f"telegram:{ALICE}"
    assert shown["reopen_reason"] == "rejected by mistake" and shown["reopened"]
    assert (rig.parts.settings.skills_dir / "chat-brevity" / PROPOSED_FILE).is_file()
    await rig.idle()
    assert "❌ Reject" in str(rig.cards_in(ALICE)[0]["reply_markup"])  # the copy follows
    assert await rig.parts.store.rejections() == []

    # Only a rejected proposal can be reopened; a bad number gets the usage.
    (again,) = await tell(rig, ALICE, f"/reopen {pid}")
    assert again == f"Proposal #{pid} is not a rejected one, so there is nothing to reopen."
    (usage,) = await tell(rig, ALICE, "/reopen")
    assert usage.startswith("Send /reopen followed by the number of a rejected proposal")
    (denied,) = await tell(rig, MALLORY, f"/reopen {pid}")
    assert "not allowed" in denied.lower()


async def test_a_line_admin_reopens_with_the_same_command_and_rules(rig: Rig) -> None:
    pid = await rig.propose()
    assert (await rig.api("POST", f"/proposals/{pid}/reject", {"reason": "no"}))[0] == 200
    (sent,) = await say_line(rig, LINE_OTHER, f"/reopen {pid}")
    assert "not allowed" in str(sent["text"]).lower()
    (gone,) = await say_line(rig, LINE_ADMIN, "/reopen 99999")
    assert gone["text"] == "This proposal no longer exists."
    done, *notices = await say_line(rig, LINE_ADMIN, f"/reopen #{pid} the users asked for it")
    assert str(done["text"]).startswith(f"↩️ Reopened proposal #{pid} (chat-brevity)")
    assert notices  # LINE cannot edit its card: the admin's copy is followed by a notice
    _, shown = await rig.api("GET", f"/proposals/{pid}")
    assert (shown["status"], shown["reopened_by"]) == ("pending", f"line:{LINE_ADMIN}")
    assert shown["reopen_reason"] == "the users asked for it"


async def test_reopen_from_the_api_the_console_and_the_terminal(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    async with gateway(settings) as gw:
        sid = await gw.seed()
        fake_llm.reply(answer(proposal(based_on=[sid])))
        (made,) = (await gw.synthesize())["proposed"]
        pid = made["id"]
        assert (await gw.call("POST", f"/proposals/{pid}/reopen"))[0] == 409  # not rejected
        assert (await gw.call("POST", f"/proposals/{pid}/reject"))[0] == 200
        # While it stands, the rejection suppresses the same claim.
        await gw.seed()
        fake_llm.reply(answer(proposal()))
        assert [s["matched"] for s in (await gw.synthesize())["suppressed"]] == [pid]
        # Another proposal for the same skill waits for review: that one is decided first.
        # (Synthesis renames a new skill under a rejected name; an update of one skill, or
        # a skill submitted by other means, keeps it.)
        staged = await gw.parts.review.submit(
            Candidate(
                kind="create",
                name="chat-brevity",
                description="Short replies in chat.",
                content="# Short",
                content_hash=body_hash("# Short"),
                generated_at=1.0,
            ),
            None,
        )
        other = {"id": staged.id}
        status, body = await gw.call("POST", f"/proposals/{pid}/reopen")
        assert status == 409 and f"proposal #{other['id']} for chat-brevity" in str(body)
        assert (await gw.call("POST", f"/proposals/{other['id']}/reject"))[0] == 200

        status, body = await gw.call("POST", f"/proposals/{pid}/reopen", {"reason": "my mistake"})
        assert status == 200 and body["outcome"] == "reopened"
        assert (body["proposal"]["reopened_by"], body["proposal"]["reopen_reason"]) == (
            "web",
            "my mistake",
        )
        assert (await gw.call("POST", "/proposals/99999/reopen"))[0] == 404

        # Rejected again, then reopened in the console.
        assert (await gw.call("POST", f"/proposals/{pid}/reject"))[0] == 200
        csrf = await console_sign_in(gw.client)
        page = await (await gw.client.get(f"/admin/proposals/{pid}")).text()
        assert f'action="/admin/proposals/{pid}/reopen"' in page
        resp = await gw.client.post(
            f"/admin/proposals/{pid}/reopen",
            data={"csrf": csrf_of(page) or csrf, "reason": "second thoughts"},
            allow_redirects=False,
        )
        assert resp.status == 303 and resp.headers["Location"].endswith("outcome=reopened")
        shown = await (await gw.client.get(resp.headers["Location"])).text()
        assert "Reopened: proposal" in shown and "second thoughts" in shown
        refused = await gw.client.post(
            f"/admin/proposals/{pid}/reopen", data={"csrf": csrf}, allow_redirects=False
        )
        assert refused.status == 409
        assert (await gw.call("POST", f"/proposals/{pid}/reject"))[0] == 200

    env = {"SKILLGATE_DATA_DIR": str(settings.data_dir)}
    code, out, err = await skillgate(
        "proposals", "reopen", str(pid), "--reason", "from the terminal", env=env
    )
    assert code == 0, err
    assert out.strip() == (
        f"reopened #{pid} (chat-brevity) (from the terminal); it waits for review again"
    )
    code, _, err = await skillgate("proposals", "reopen", str(pid), env=env)
    assert code == 1 and "is pending, not rejected" in err
    async with gateway(settings) as gw:
        _, shown = await gw.call("GET", f"/proposals/{pid}")
        assert shown["status"] == "pending" and str(shown["reopened_by"]).startswith("cli:")


async def test_a_reopened_tombstone_no_longer_counts_on_either_database(any_store: Store) -> None:
    from gateway.review.proposals import Candidate, Rejection

    sid = await seed_session(any_store)
    made = await any_store.add_proposal(
        Candidate(
            kind="create",
            name="chat-brevity",
            description="Short.",
            content="# Brevity",
            content_hash="h",
            based_on=[sid],
            generated_at=1.0,
        ),
        None,
    )
    tomb = Rejection(
        proposal_id=made.id,
        kind="create",
        name=made.name,
        description=made.description,
        content_hash="h",
        rejected_at=2.0,
    )
    assert await any_store.transition(
        made.id, from_status="pending", to_status="rejected", by="web", at=2.0, tombstone=tomb
    )
    assert [r.proposal_id for r in await any_store.rejections()] == [made.id]
    assert await any_store.reopen_proposal(made.id, "cli:ann", 3.0, "by mistake")
    assert not await any_store.reopen_proposal(made.id, "cli:bob", 4.0, None)  # first one wins
    assert await any_store.rejections() == []
    again = await any_store.get_proposal(made.id)
    assert again is not None and (again.status, again.reopened_by, again.reopen_reason) == (
        "pending",
        "cli:ann",
        "by mistake",
    )
    assert (again.decided_by, again.decided_at) == (None, None)
