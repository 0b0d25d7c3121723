"""The on-board model (LLM_LOCAL_MODEL) as the judge: tried on the calibration set, marked
unable to judge whatever it scores, and synthesis still runs with a person deciding."""

from __future__ import annotations

from collections.abc import Callable

from gateway.config import Settings
from gateway.ops.doctor import check_judge
from gateway.synthesis.calibration import builtin_pairs
from gateway.synthesis.judge import SAME_CLAIM
from tests.fakes.openai_server import FakeOpenAI, calibrated
from tests.synthesis.test_calibration import ALWAYS_NONE
from tests.synthesis.test_same_claim import REWORDED, VERIFY, proposed_again, rejected
from tests.synthesis_support import gateway, synth_settings


def onboard(settings: Settings) -> Settings:
    """The settings as `serve` has them once the on-board model's server is up: pointed at it,
    LLM_LOCAL_MODEL still set (here the fake stands in for llama.cpp's server)."""
    return settings.model_copy(update={"llm_local_model": "smollm2"})


async def test_the_onboard_model_is_unable_to_judge_and_synthesis_still_runs_for_trying(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    # Answers that would pass the bar from any other model.
    fake_llm.judge = calibrated(ALWAYS_NONE)
    async with gateway(onboard(synth_settings(make_settings, fake_llm))) as gw:
        (first,) = await rejected(gw, fake_llm, VERIFY)
        run = await proposed_again(gw, fake_llm, REWORDED)
        assert run["status"] == "ok" and run["suppressed"] == []
        assert [p["name"] for p in run["proposed"]] == ["account-verification"]
        (check,) = run["checks"]
        assert check["decision"] == "undecided"
        assert check["reason"].startswith(f"possibly the same as rejected #{first} verify-identity")
        assert "the on-board model (LLM_LOCAL_MODEL), for trying only" in run["judge"]
        assert "16 of 16 right" in run["judge"] and "unset LLM_LOCAL_MODEL" in run["judge"]
        found = await gw.parts.store.calibration("fake-model", SAME_CLAIM.kind)
        assert found is not None and found.onboard and found.verdict == "unable"
        # Tried once on the set; no real question is put to it.
        assert len(fake_llm.same_claim_requests) == len(builtin_pairs())


async def test_doctor_names_the_onboard_model_unable_with_the_fix_a_real_model(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = onboard(synth_settings(make_settings, fake_llm))
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    fake_llm.judge = calibrated(ALWAYS_NONE)
    check = await check_judge(settings)
    assert (check.name, check.status) == ("same-claim judge", "warn")
    assert check.detail.startswith(
        "fake-model on the same-claim question: unable to judge: the on-board model"
    )
    assert "unset LLM_LOCAL_MODEL and set LLM_BASE_URL and LLM_MODEL" in check.fix
    # The same model served as any other is judged on its answers.
    check = await check_judge(synth_settings(make_settings, fake_llm))
    assert check.status == "ok"
