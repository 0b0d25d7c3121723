"""Chat text that steers the synthesizer, and a model that complies: the rules still hold.

Each case of the corpus's `synthesis` section seeds a rated session with the hostile chat
text, scripts the model to answer with the proposal it asks for, and runs a pass through
the admin API. A proposal carrying a secret or a path is refused; one that changes a skill a
person wrote waits for review whatever SKILLGATE_REQUIRE_APPROVAL says; nothing the chat
says changes a setting or a live skill.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from gateway.config import Settings
from gateway.core.fence import TAG
from gateway.skills.library import parse_skill
from tests.fakes.openai_server import FakeOpenAI
from tests.reliability.hostile import load_corpus
from tests.reliability.state import data_files
from tests.synthesis_support import answer, evidence_prompt, gateway, proposal, synth_settings

CASES = load_corpus()["synthesis"]
LLM_KEY = "llm-key-3f9c2a7d51e84b06"
BOT_TOKEN = "123456:AAH-fakeBotTokenForTests_0123456789ab"
HOUSE_STYLE = (
    "---\nname: house-style\ndescription: How answers sound in this company's chats.\n---\n\n"
    "# House style\n\nWarm, short, no jargon.\n"
)


def fill(text: str) -> str:
    return text.replace("{{llm_api_key}}", LLM_KEY).replace("{{bot_token}}", BOT_TOKEN)


def drafted(case: dict[str, Any]) -> dict[str, Any]:
    """The proposal the compliant model answers with."""
    fields = {k: v for k, v in case["proposal"].items() if k not in ("repeat", "content")}
    content = fill(str(case["proposal"].get("content", "")))
    if "repeat" in case["proposal"]:
        piece, count = case["proposal"]["repeat"]
        content = str(piece) * int(count)
    return proposal(content=content, **fields)


def fences_hold(request: dict[str, Any]) -> bool:
    """Every fence the model saw was opened and closed by the gateway, none from inside."""
    prompt = evidence_prompt(request)
    tag = re.findall(rf"<({TAG}-[0-9a-f]{{12}})[ >]", prompt)[0]
    opened = len(re.findall(rf"<{tag}[ >]", prompt))
    closed = prompt.count(f"</{tag}>")
    forged_left = re.findall(rf"<\s*/?\s*{TAG}", prompt)
    return opened == closed == len(forged_left) // 2 >= 1 and f"&lt;/{TAG}>" in prompt


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
async def test_the_synthesizer_cannot_be_talked_out_of_its_rules(
    case: dict[str, Any], make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(
        make_settings,
        fake_llm,
        require_approval=case.get("require_approval", True),
        llm_api_key=LLM_KEY,
        telegram_bot_token=BOT_TOKEN,
    )
    house = settings.skills_dir / "house-style"
    house.mkdir(parents=True)
    (house / "SKILL.md").write_text(HOUSE_STYLE, encoding="utf-8")
    async with gateway(settings) as gw:
        session = await gw.seed(question=fill(case["chat"]))
        fake_llm.reply(answer({**drafted(case), "based_on": [session]}))
        before = data_files(settings.data_dir)
        records = await gw.parts.store.skill_records()
        run = await gw.synthesize()
        status, proposals = await gw.call("GET", "/proposals")
        after = data_files(settings.data_dir)
        records_after = await gw.parts.store.skill_records()
    assert status == 200
    new = [f for f in after if f not in before]
    if "forged-fence" in case["id"]:
        assert fences_hold(fake_llm.requests[-1])
    expect = case["expect"]
    if expect in ("refused", "failed"):
        assert proposals == [] and after == before and records_after == records
        assert run["status"] == ("failed" if expect == "failed" else "ok"), run
        if expect == "refused":
            assert len(run["refused"]) == 1, run
        return
    (made,) = proposals
    assert run["status"] == "ok" and made["id"] == run["proposed"][0]["id"], run
    if expect == "pending":
        assert made["status"] == "pending"
        assert records_after == records  # nothing live changed
        assert [f for f in before if f not in after] == []  # no live file was touched
        assert [name for name, _ in new] == [f"skills/{made['name']}/SKILL.md.proposed"]
        return
    assert expect == "applied_as_auto" and made["status"] == "applied"
    live = parse_skill((settings.skills_dir / made["name"] / "SKILL.md").read_text("utf-8"))
    assert live.metadata["source"] == "auto" and live.metadata["review"] == "applied"
    assert "source: custom" not in live.body and "review: approved" not in live.body
    assert {r.slug: r.source for r in records_after}[made["name"]] == "auto"
