"""The on-board model's calibration, measured for real: SmolLM2-135M on llama.cpp's server,
asked the built-in calibration set exactly as the gateway asks (strict `json_schema`).

It is marked unable to judge as the on-board model whatever it scores; the test also
records whether its own answers would have passed the bar (docs/LEARNING.md reports it).
"""

from __future__ import annotations

import os
import time

import pytest

from gateway.core.llm import OpenAIChat
from gateway.synthesis.calibration import Calibration, Calibrator, builtin_pairs, judge_line
from gateway.synthesis.judge import SAME_CLAIM
from tests.real_llama import INSTALL, MODEL_NAME, available, llama_server
from tests.serve_process import free_port

REQUIRED = os.environ.get("SKILLGATE_REQUIRE_REAL_MODEL") == "1"
pytestmark = [
    pytest.mark.real_model,
    pytest.mark.skipif(
        not available() and not REQUIRED,
        reason=f"the real-model wheels are not installed: {INSTALL}",
    ),
]


class Kept:
    """The results, in memory."""

    def __init__(self) -> None:
        self.results: list[Calibration] = []

    async def calibration(self, model: str, kind: str) -> Calibration | None:
        return None

    async def record_calibration(self, result: Calibration) -> None:
        self.results.append(result)


async def test_smollm2_on_llama_cpp_is_calibrated_and_marked_unable_to_judge() -> None:
    kept = Kept()
    with llama_server(free_port()) as url:
        llm = OpenAIChat(url, MODEL_NAME, None, timeout=120, max_retries=2)
        try:
            calibrator = Calibrator(kept, builtin_pairs(), clock=time.time, onboard=True)
            started = time.monotonic()
            result = await calibrator.result(llm, SAME_CLAIM)
            seconds = time.monotonic() - started
        finally:
            await llm.close()
    as_itself = result.model_copy(update={"onboard": False})
    print(
        f"\n{judge_line(result, fix=False)}\nas any model: {as_itself.verdict}"
        f" ({as_itself.summary()}); {seconds:.0f} s for {result.total} questions"
    )
    assert kept.results == [result]
    assert result.total == len(builtin_pairs()) and result.onboard
    assert result.verdict == "unable"
    assert "on-board model" in result.summary()
