# ruff: noqa: RUF001  (full-width punctuation is how Japanese is written)
"""Each claim's statement in English: written under the schema, kept, ranked and shown to the
judge; a taken name sends a claim to the judge and a different one is renamed."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from eval.ranking import SET, load, measure
from gateway.config import Settings
from gateway.review.proposals import Claim, Rejection
from gateway.synthesis.answer import MAX_STATEMENT, answer_schema, parse_answer
from gateway.synthesis.calibration import builtin_pairs
from gateway.synthesis.prompt import system_message
from gateway.synthesis.ranking import Known, rank
from gateway.synthesis.screening import free_name
from gateway.synthesis.similarity import body_hash, change_text
from tests.console_support import sign_in as console_sign_in
from tests.fakes.openai_server import FakeOpenAI, calibrated, claims_asked, same_claim_answer
from tests.synthesis.same_claim_pairs import DIFFERENT, ORIGINALS, REPEATS
from tests.synthesis_support import Gateway, answer, gateway, proposal, synth_settings

BRIEF = proposal(
    "chat-brevity",
    description="Use for every chat answer: keep it short.",
    content="# Brevity\n\nKeep every answer under 60 words.",
)
BRIEF["statement"] = "Keep every chat answer under 60 words."
# A different claim under the same name.
GREETING = proposal(
    "chat-brevity",
    description="Use for the first answer of a chat: greet the user.",
    content="# Greeting\n\nOpen the first answer of a conversation with a short greeting.",
)
GREETING["statement"] = "Open the first answer of a conversation with a short greeting."
# BRIEF in Japanese, its statement in English as the schema asks.
BRIEF_JA = proposal(
    "mijikaku",
    description="チャットのすべての回答に使う：短くまとめる。",
    content="# 簡潔に\n\n回答はすべて60語以内にしてください。",
)
BRIEF_JA["statement"] = "Keep each chat answer below 60 words."


# The set and its measurement


def test_the_ranking_set_is_large_balanced_in_four_languages_and_kept_apart() -> None:
    pairs = load()
    assert len(pairs) >= 40
    assert sum(p.same for p in pairs) * 2 == len(pairs)
    hows = {p.how for p in pairs if p.same}
    for lang in ("ja", "zh-TW", "th"):
        assert any(f"en-{lang}" in h for h in hows), lang
        assert any(f"{lang}-en" in h for h in hows), lang
    assert {"reworded", "renamed", "reordered"} <= hows
    assert sum("same name" in p.how for p in pairs if not p.same) >= 5
    # Written for this measurement: no text of the tests' pairs or the calibration set.
    ours = {t for p in pairs for s in (p.original, p.new) for t in (s.name, s.body)}
    tests = {t for e in [*ORIGINALS, *(e for _, e in REPEATS), *DIFFERENT] for t in (e[0], e[2])}
    calibration = {t for p in builtin_pairs() for s in (p.known, p.new) for t in (s.name, s.body)}
    assert not ours & tests
    assert not ours & calibration


async def test_with_a_correct_judge_repeats_are_caught_and_no_different_claim_is_suppressed() -> (
    None
):
    figures = await measure(load(SET))
    assert figures.repeats >= 20
    assert figures.caught_share >= 0.95, figures.missed  # the target
    assert figures.suppressed == 0, figures.wrongly
    # Every different claim under its original's name went to the judge and was renamed.
    assert figures.renamed == sum("same name" in p.how for p in load() if not p.same)
    # One question per candidate: nothing was decided by a name.
    assert figures.questions == len(load())


async def test_statements_bring_each_translation_s_original_among_the_claims_shown() -> None:
    pairs = load()
    known = [
        Known("rejected", _claim(p.original.name, p.original.description, p.original.body, s))
        for p in pairs
        for s in [p.original.statement]
    ]
    translated = [p for p in pairs if p.same and "translated" in p.how]
    for p in translated:
        new = _claim(p.new.name, p.new.description, p.new.body, p.new.statement)
        shown = [r.known.claim.name for r in await rank(new, known, 4)]
        assert p.original.name in shown, p.id
    # Without statements, letters alone miss some (the figure eval.ranking reports).
    bare = [Known("rejected", k.claim.model_copy(update={"statement": None})) for k in known]
    missed = 0
    for p in translated:
        new = _claim(p.new.name, p.new.description, p.new.body, None)
        missed += p.original.name not in [r.known.claim.name for r in await rank(new, bare, 4)]
    assert missed >= 1


def _claim(name: str, description: str, body: str, statement: str | None) -> Claim:
    return Claim(
        kind="create",
        name=name,
        description=description,
        content_hash=body_hash(body),
        change_text=change_text(None, body),
        statement=statement,
    )


# The contract


def test_the_statement_is_in_the_schema_and_the_prompt_and_an_older_answer_still_reads() -> None:
    schema = answer_schema(2, 4000, shown=[1], skills=["tone"])
    field = schema["properties"]["proposals"]["items"]["properties"]["statement"]
    assert field == {"type": "string", "minLength": 1, "maxLength": MAX_STATEMENT}
    assert '"statement"' in system_message(2, 4000)
    older = json.dumps({"proposals": [{k: v for k, v in BRIEF.items() if k != "statement"}]})
    (draft,) = parse_answer(older)
    assert draft.statement == ""
    (draft,) = parse_answer(answer(BRIEF))
    assert draft.statement == "Keep every chat answer under 60 words."


def test_a_taken_name_is_renamed_deterministically_within_the_slug_limit() -> None:
    taken = {"tone", "tone-2"}
    assert free_name("tone", taken.__contains__) == "tone-3"
    assert free_name("tone", set().__contains__) == "tone-2"
    long = "a" * 15 + "-" + "b" * 15 + "-" + "c" * 15 + "-" + "d" * 16  # 64 characters
    renamed = free_name(long, {long}.__contains__)
    assert renamed == long[:62] + "-2" and len(renamed) == 64
    # Cut at a hyphen, the hyphen goes: never two in a row.
    edge = "x" * 61 + "-yy"
    assert free_name(edge, {edge}.__contains__) == "x" * 61 + "-2"


# Through a pass


async def _reject(gw: Gateway, fake_llm: FakeOpenAI, draft: dict[str, Any]) -> int:
    await gw.seed()
    fake_llm.reply(answer(draft))
    (made,) = (await gw.synthesize())["proposed"]
    status, _ = await gw.call("POST", f"/proposals/{made['id']}/reject", {"reason": "no"})
    assert status == 200
    return int(made["id"])


async def _again(gw: Gateway, fake_llm: FakeOpenAI, *drafts: dict[str, Any]) -> dict[str, Any]:
    await gw.seed(comment="still not right")
    fake_llm.reply(answer(*drafts))
    return await gw.synthesize()


@pytest.mark.parametrize("same", [False, True])
async def test_a_claim_under_a_rejected_name_goes_to_the_judge_and_if_different_is_renamed(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, same: bool
) -> None:
    asked: list[tuple[list[str], str]] = []

    def judge(body: dict[str, Any]) -> str:
        asked.append(claims_asked(body))
        named = asked[-1][0][0].startswith("name: chat-brevity\n")
        return same_claim_answer(1 if same and named else 0, "scripted")

    fake_llm.judge = calibrated(judge)
    async with gateway(synth_settings(make_settings, fake_llm)) as gw:
        rejected = await _reject(gw, fake_llm, BRIEF)
        run = await _again(gw, fake_llm, GREETING)
        # The judge was asked, shown the rejection that holds the name.
        known, new = asked[-1]
        assert known[0].startswith("name: chat-brevity\n") and new.startswith("name: chat-brevity")
        (check,) = run["checks"]
        if same:
            (suppressed,) = run["suppressed"]
            assert suppressed["matched"] == rejected and not run["proposed"]
            return
        (made,) = run["proposed"]
        assert made["name"] == "chat-brevity-2"
        assert check["decision"] == "different"
        assert check["reason"].endswith(
            f"renamed chat-brevity -> chat-brevity-2: rejected proposal #{rejected} holds the name"
        )
        status, body = await gw.call("GET", f"/proposals/{made['id']}")
        assert status == 200 and body["statement"] == GREETING["statement"]


async def test_a_different_claim_under_a_pending_name_is_renamed_and_both_await_review(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.judge = calibrated(lambda body: same_claim_answer(0, "different"))
    async with gateway(synth_settings(make_settings, fake_llm)) as gw:
        await gw.seed()
        fake_llm.reply(answer(BRIEF))
        (first,) = (await gw.synthesize())["proposed"]
        run = await _again(gw, fake_llm, GREETING)
        (second,) = run["proposed"]
        assert (first["name"], second["name"]) == ("chat-brevity", "chat-brevity-2")
        assert run["checks"][0]["reason"].endswith(
            f"proposal #{first['id']}, which awaits review holds the name"
        )
        pending = [p.name for p in await gw.parts.store.pending_proposals()]
        assert sorted(pending) == ["chat-brevity", "chat-brevity-2"]
        # The reviewer reads each one's claim in English on its console page.
        await console_sign_in(gw.client)
        page = await (await gw.client.get(f"/admin/proposals/{second['id']}")).text()
        assert f"<dt>Claim</dt><dd>{GREETING['statement']}</dd>" in page


async def test_a_translation_s_statement_meets_the_rejection_s_and_the_judge_sees_both(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    asked: list[tuple[list[str], str]] = []

    def judge(body: dict[str, Any]) -> str:
        asked.append(claims_asked(body))
        known, _ = asked[-1]
        hit = [i for i, k in enumerate(known, 1) if k.startswith("name: chat-brevity\n")]
        return same_claim_answer(hit[0] if hit else 0, "the same limit in Japanese")

    fake_llm.judge = calibrated(judge)
    async with gateway(synth_settings(make_settings, fake_llm)) as gw:
        rejected = await _reject(gw, fake_llm, BRIEF)
        (tomb,) = await gw.parts.store.rejections()
        assert isinstance(tomb, Rejection) and tomb.statement == BRIEF["statement"]
        run = await _again(gw, fake_llm, BRIEF_JA)
        (suppressed,) = run["suppressed"]
        assert suppressed["matched"] == rejected
        known, new = asked[-1]
        assert f"in short: {BRIEF['statement']}" in known[0]
        assert f"in short: {BRIEF_JA['statement']}" in new
