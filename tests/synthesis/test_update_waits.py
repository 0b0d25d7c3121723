"""An update of a skill that already has a proposal awaiting review waits for that decision (one
staged file per skill), kept on disk with what it is based on, and is considered again at the
first pass after the decision: its evidence is not lost to a proposal it could not see."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from gateway.config import Settings
from gateway.skills.catalog import bundled_skills_dir
from gateway.synthesis.held import held_drafts
from tests.fakes.openai_server import FakeOpenAI
from tests.synthesis_support import answer, gateway, proposal, synth_settings

TARGET = "troubleshooting-steps"
DESCRIPTION = (
    "Diagnose a broken router, printer, laptop or phone step by step: ask what the user sees,"
    " then give a short ordered path to a fix, one step a line."
)


def update(content: str, based_on: list[int]) -> dict[str, Any]:
    draft = proposal(TARGET, kind="update", target=TARGET, content=content, based_on=based_on)
    draft["description"] = DESCRIPTION
    return draft


def live_body() -> str:
    """The bundled skill's body, which both updates extend by one different rule."""
    folder = bundled_skills_dir()
    assert folder is not None
    return (folder / TARGET / "SKILL.md").read_text(encoding="utf-8").split("---", 2)[2].strip()


FIRST = live_body() + "\n8. For a router, ask which light blinks before anything else."
SECOND = (
    live_body() + "\n8. When a device shows an error code, look it up in the vendor's list and"
    " quote the fix it names before suggesting anything else."
)


@pytest.mark.parametrize("decision", ["reject", "approve"])
async def test_an_update_waits_for_its_skills_pending_proposal_then_is_considered_again(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, decision: str
) -> None:
    async with gateway(synth_settings(make_settings, fake_llm)) as gw:
        one = await gw.seed(question="My router blinks red", comment="no steps at all")
        fake_llm.reply(answer(update(FIRST, [one])))
        (first,) = (await gw.synthesize())["proposed"]
        assert (first["kind"], first["target"]) == ("update", TARGET)

        two = await gw.seed(question="The printer says E-04", comment="asked nothing first")
        fake_llm.reply(answer(update(SECOND, [two])))
        run = await gw.synthesize()
        # Neither staged beside the pending one nor dropped as its repeat: it waits.
        assert run["proposed"] == [] and run["suppressed"] == [], run
        (held,) = run["held"]
        assert held["waits_for"] == first["id"] and held["tries"] == 0
        (kept,) = await held_drafts(gw.parts.store)  # on disk, with what it is based on
        assert kept.waits_for == first["id"] and kept.draft.content == SECOND

        # While the first is undecided, a pass with nothing new asks the model nothing.
        calls = len(fake_llm.requests)
        assert (await gw.synthesize())["held"] == run["held"]
        assert len(fake_llm.requests) == calls

        body = {"reason": "not this way"} if decision == "reject" else None
        status, _ = await gw.call("POST", f"/proposals/{first['id']}/{decision}", body)
        assert status == 200

        run = await gw.synthesize()
        assert len(run["proposed"]) == 1, json.dumps(run)
        (made,) = run["proposed"]
        assert (made["kind"], made["target"], made["status"]) == ("update", TARGET, "pending")
        assert run["held"] == [] and await held_drafts(gw.parts.store) == []
        status, detail = await gw.call("GET", f"/proposals/{made['id']}")
        assert status == 200 and detail["based_on"] == [two]
        assert "look it up in the vendor's list" in detail["content"]


async def test_the_runs_page_and_the_command_say_what_an_update_waits_for(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    from tests.console_support import sign_in

    async with gateway(synth_settings(make_settings, fake_llm)) as gw:
        one = await gw.seed(question="My router blinks red", comment="no steps at all")
        fake_llm.reply(answer(update(FIRST, [one])))
        (first,) = (await gw.synthesize())["proposed"]
        two = await gw.seed(question="The printer says E-04", comment="asked nothing first")
        fake_llm.reply(answer(update(SECOND, [two])))
        await gw.synthesize()
        await sign_in(gw.client)
        resp = await gw.client.get("/admin/runs")
        page = await resp.text()
        assert resp.status == 200
        assert (
            f'waits for <a href="/admin/proposals/{first["id"]}">proposal #{first["id"]}</a>'
            in (page)
        )
