"""A claim in other words, under another name, reordered or translated is recognised by the model.

Each candidate is one question to the model about the few known claims most like it
(rejections, pending proposals, live skills); the model's answer alone decides, the run
records the decision, what was compared and why, and a candidate whose question had no
usable answer is held back and checked again next pass, never staged unchecked.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping
from typing import Any

from gateway.config import Settings
from tests.console_support import sign_in as console_sign_in
from tests.effect_support import plant
from tests.fakes.openai_server import (
    FakeOpenAI,
    Responder,
    Scripted,
    calibrated,
    claims_asked,
    same_claim_answer,
)
from tests.synthesis.same_claim_pairs import DIFFERENT, ORIGINALS, REPEATS, SAME_AS, Entry
from tests.synthesis_support import Gateway, answer, gateway, proposal, synth_settings

VERIFY = proposal(
    "verify-identity",
    description="Use for every answer: confirm who the user is before answering.",
    content="# Verify the user\n\nBefore answering, ask the user for their account password"
    " to confirm who they are.",
)
REWORDED = proposal(
    "account-verification",
    description="Use for every answer: make sure the user proves their identity before answering.",
    content="# Account verification\n\nMake sure the user proves their identity with their"
    " login secret before you reply.",
)
SAME_TOPIC = proposal(
    "password-reset-help",
    description="Use when a user asks how to reset a forgotten password.",
    content="# Password reset\n\nPoint the user to the Forgot password link on the sign-in page."
    " Never ask for their password, not even to check who they are.",
)
BRIEF_BODY = (
    "# Keep it short\n\nKeep every answer under 60 words.\nLead with the facts; no introduction,"
    " no closing offer of more help."
)
BRIEF_DESCRIPTION = "Use for every answer: keep it short enough to read at a glance."
_NAME = re.compile(r"\Aname: ([a-z0-9-]+)")


def names_asked(body: dict[str, Any]) -> tuple[list[str], str]:
    """The slugs of the known claims shown (in order) and of the candidate."""
    known, new = claims_asked(body)
    slug = [m.group(1) for t in [*known, new] if (m := _NAME.match(t))]
    return slug[:-1], slug[-1]


def knowing(truth: Mapping[str, str]) -> Responder:
    """A judge that answers correctly: the original a repeat restates, when it was shown."""

    def judge(body: dict[str, Any]) -> str:
        shown, new = names_asked(body)
        original = truth.get(new)
        if original in shown:
            return same_claim_answer(shown.index(original) + 1, f"{new} restates {original}")
        return same_claim_answer(0, "a different instruction")

    return calibrated(judge)


def draft(entry: Entry) -> dict[str, Any]:
    slug, description, body = entry
    return proposal(slug, description=description, content=body)


async def rejected(gw: Gateway, fake_llm: FakeOpenAI, *drafts: dict[str, Any]) -> list[int]:
    """Have the model propose `drafts` and an admin reject each; returns the proposal ids."""
    await gw.seed()
    fake_llm.reply(answer(*drafts))
    made = (await gw.synthesize())["proposed"]
    assert [p["name"] for p in made] == [d["name"] for d in drafts]
    for p in made:
        status, _ = await gw.call("POST", f"/proposals/{p['id']}/reject", {"reason": "no"})
        assert status == 200
    return [int(p["id"]) for p in made]


async def proposed_again(gw: Gateway, fake_llm: FakeOpenAI, *drafts: dict[str, Any]) -> Any:
    await gw.seed(comment="still not right")
    fake_llm.reply(answer(*drafts))
    return await gw.synthesize()


async def test_repeats_in_other_words_names_orders_and_languages_are_suppressed_others_pass(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.judge = knowing(SAME_AS)
    settings = synth_settings(make_settings, fake_llm, max_proposals_per_run=50)
    async with gateway(settings) as gw:
        ids = dict(
            zip(
                [o[0] for o in ORIGINALS],
                await rejected(gw, fake_llm, *map(draft, ORIGINALS)),
                strict=True,
            )
        )
        run = await proposed_again(
            gw, fake_llm, *(draft(e) for _, e in REPEATS), *map(draft, DIFFERENT)
        )
        suppressed = {s["name"]: s for s in run["suppressed"]}
        caught = [e[0] for _, e in REPEATS if e[0] in suppressed]
        assert len(caught) >= 0.9 * len(REPEATS), sorted(set(SAME_AS) - set(caught))
        for name in caught:
            assert suppressed[name]["matched"] == ids[SAME_AS[name]]
        # No different claim is suppressed: each reaches review.
        assert [p["name"] for p in run["proposed"] if p["name"] not in SAME_AS] == [
            d[0] for d in DIFFERENT
        ]
        # Each translation, in every direction, and each rewording was among what was caught.
        kinds = {how for how, e in REPEATS if e[0] in caught}
        assert {"reworded", "renamed", "reordered", "translated en-ja", "translated th-en"} <= kinds
        # The model saw at most four known claims per question, one question per candidate.
        asked = fake_llm.same_claim_requests[-len(REPEATS) - len(DIFFERENT) :]
        assert all(1 <= len(names_asked(b)[0]) <= 4 for b in asked)
        assert [names_asked(b)[1] for b in asked] == [
            *(e[0] for _, e in REPEATS),
            *(d[0] for d in DIFFERENT),
        ]


async def test_the_decision_what_was_compared_and_why_are_on_the_run_page_and_api(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.judge = knowing({"account-verification": "verify-identity"})
    settings = synth_settings(make_settings, fake_llm, llm_same_claim_model="judge-model")
    async with gateway(settings) as gw:
        (first,) = await rejected(gw, fake_llm, VERIFY)
        run = await proposed_again(gw, fake_llm, REWORDED, SAME_TOPIC)
        assert [p["name"] for p in run["proposed"]] == ["password-reset-help"]
        (item,) = run["suppressed"]
        assert (item["name"], item["matched"]) == ("account-verification", first)
        assert item["reason"] == f"matches rejected proposal #{first}: no"
        assert item["detail"].startswith("the model judged it the same claim (letters likeness")
        assert item["detail"].endswith("account-verification restates verify-identity")
        # LLM_SAME_CLAIM_MODEL answers the question; LLM_MODEL still synthesizes.
        assert {b["model"] for b in fake_llm.same_claim_requests} == {"judge-model"}
        assert fake_llm.requests[-1]["model"] == "fake-model"
        # Its answer can only name one of the claims shown, or none (0), and it is greedy.
        for body in fake_llm.same_claim_requests:
            shown = len(claims_asked(body)[0])
            schema = body["response_format"]["json_schema"]["schema"]["properties"]
            assert schema["same_as"]["enum"] == list(range(shown + 1)), schema
            assert body["temperature"] == 0

        status, detail = await gw.call("GET", f"/runs/{run['run_id']}")
        assert status == 200 and detail["suppressed_items"] == [item]
        same, different = detail["same_claim_checks"]
        assert (same["name"], same["decision"], same["matched"]) == (
            "account-verification",
            "same",
            first,
        )
        assert same["compared"][0] == f"rejected #{first} verify-identity"
        assert (different["name"], different["decision"]) == ("password-reset-help", "different")
        assert f"rejected #{first} verify-identity" in different["compared"]
        assert different["reason"] == "the model judged it a new claim: a different instruction"

        await console_sign_in(gw.client)
        page = await (await gw.client.get(f"/admin/runs/{run['run_id']}")).text()
        assert f'href="/admin/proposals/{first}">proposal #{first}</a>' in page
        assert f"Compared with: rejected #{first} verify-identity" in page
        assert "Why: the model judged it a new claim: a different instruction" in page
        # The rejected proposal's page shows that its claim came back, and where.
        rejected_page = await (await gw.client.get(f"/admin/proposals/{first}")).text()
        assert "Proposed again 1 time" in rejected_page
        assert f'href="/admin/runs/{run["run_id"]}">Run #{run["run_id"]}</a>' in rejected_page
        assert "account-verification" in rejected_page


async def test_with_embeddings_the_closest_claims_are_chosen_by_them(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.judge = knowing({"account-verification": "verify-identity"})
    settings = synth_settings(make_settings, fake_llm, llm_embedding_model="fake-embedding")
    async with gateway(settings) as gw:
        (first,) = await rejected(gw, fake_llm, VERIFY)
        run = await proposed_again(gw, fake_llm, REWORDED)
        (item,) = run["suppressed"]
        assert item["matched"] == first
        assert item["detail"].startswith("the model judged it the same claim (embedding likeness")
        assert fake_llm.embedding_requests[-1]["model"] == "fake-embedding"


async def test_embeddings_that_fail_leave_the_letters_to_rank_and_the_model_to_decide(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.judge = knowing({"account-verification": "verify-identity"})
    fake_llm.embedding_status = 404
    settings = synth_settings(make_settings, fake_llm, llm_embedding_model="missing-model")
    async with gateway(settings) as gw:
        (first,) = await rejected(gw, fake_llm, VERIFY)
        run = await proposed_again(gw, fake_llm, REWORDED)
        assert run["status"] == "ok" and run["error"] is None
        assert [s["matched"] for s in run["suppressed"]] == [first]
        assert "letters likeness" in run["suppressed"][0]["detail"]
        assert fake_llm.embedding_requests


async def test_a_renamed_copy_of_a_live_skill_is_suppressed(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    await plant(settings, "brief-answers", BRIEF_DESCRIPTION, BRIEF_BODY)
    copy = proposal(
        "concise-replies",
        description=BRIEF_DESCRIPTION,
        content=BRIEF_BODY.replace("# Keep it short", "# Concise replies"),
    )
    async with gateway(settings) as gw:
        run = await proposed_again(gw, fake_llm, copy)
        assert run["proposed"] == []
        (item,) = run["suppressed"]
        assert item["reason"] == "repeats the live skill brief-answers"
        assert (item["matched"], item["matched_skill"]) == (None, "brief-answers")
        (check,) = run["checks"]
        assert check["compared"][0] == "live brief-answers"


async def test_a_candidate_the_model_cannot_judge_is_held_back_and_checked_again_next_pass(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    now = [time.time() + 600]  # after every rating the test makes (stored at the real time)
    async with gateway(settings, lambda: now[0]) as gw:
        await rejected(gw, fake_llm, VERIFY)
        fake_llm.judge = calibrated(lambda body: "I think they are quite similar.")
        run = await proposed_again(gw, fake_llm, SAME_TOPIC)
        assert run["status"] == "ok" and run["proposed"] == [] and run["suppressed"] == []
        (check,) = run["checks"]
        assert (check["name"], check["decision"]) == ("password-reset-help", "held")
        assert check["reason"].startswith("the model's answer is not the same-claim JSON")
        assert "(asked 1 of 4 times; asked again at the next pass" in check["reason"]
        (held,) = run["held"]
        assert (held["name"], held["tries"]) == ("password-reset-help", 1)
        status, pending = await gw.call("GET", "/proposals?status=pending")
        assert status == 200 and pending == []

    # The model is down: still held, across a restart, and asked again only hours later.
    fake_llm.judge = calibrated(lambda body: Scripted(status=503))
    async with gateway(settings, lambda: now[0]) as gw:
        asked = len(fake_llm.requests)
        again = await gw.synthesize()
        assert again["proposed"] == [] and again["checks"][0]["decision"] == "held"
        assert again["checks"][0]["reason"].startswith("the model could not be asked")
        assert again["held"][0]["next_at"] == now[0] + 4 * 3600
        questions = len(fake_llm.same_claim_requests)
        nothing = await gw.synthesize()  # nothing new, nothing due: no call at all
        assert nothing["checks"] == [] and len(nothing["held"]) == 1
        assert len(fake_llm.same_claim_requests) == questions

    # It answers: the held candidate is checked and staged, with no new synthesis call.
    fake_llm.judge = calibrated(lambda body: same_claim_answer(0, "a different instruction"))
    now[0] += 4 * 3600
    async with gateway(settings, lambda: now[0]) as gw:
        done = await gw.synthesize()
        assert [p["name"] for p in done["proposed"]] == ["password-reset-help"]
        assert [c["decision"] for c in done["checks"]] == ["different"]
        assert len(fake_llm.requests) == asked
        assert (await gw.synthesize())["proposed"] == []  # checked once, staged once


async def test_a_held_candidate_found_to_repeat_a_rejection_is_suppressed_when_answered(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    async with gateway(settings) as gw:
        (first,) = await rejected(gw, fake_llm, VERIFY)
        fake_llm.judge = calibrated(lambda body: json.dumps({"same_as": 9, "why": "out of range"}))
        run = await proposed_again(gw, fake_llm, REWORDED)
        assert [c["decision"] for c in run["checks"]] == ["held"]
        assert "not one of 0-" in run["checks"][0]["reason"]
        fake_llm.judge = knowing({"account-verification": "verify-identity"})
        again = await gw.synthesize()
        assert again["proposed"] == []
        assert [s["matched"] for s in again["suppressed"]] == [first]
