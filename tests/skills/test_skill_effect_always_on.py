"""A skill loaded on every answer: the adaptive holdout and the looks of the test judge it fast.

Such a skill has no "offered but not loaded" answers, so its comparison is only what the
holdout withholds. Two checks: the verdict rule itself over hundreds of seeded runs (the
same functions the gateway uses, at the default settings), and the whole gateway on
loopback, where a planted harmful always-on skill draws a retirement proposal.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable

from eval.retirement import one_run
from gateway.config import Settings
from gateway.skills.effect import EffectThresholds
from tests.effect_support import KITCHEN, KITCHEN_DESCRIPTION, RAMBLE, World, plant
from tests.fakes.openai_server import FakeOpenAI
from tests.synthesis_support import gateway, synth_settings

RULE = EffectThresholds()  # the defaults: 5 rated answers a side, 15 points, alpha 5%
BOUND = 45
TAIL = 50  # the 90th percentile over 300 seeds is 44 (docs/LEARNING.md)
RUNS = 200


def retired_after(p_with: float, p_without: float, seed: int, horizon: int = 300) -> int | None:
    """Rated answers until a harmful verdict, checked after each (`eval/retirement.py`)."""
    return one_run(p_with, p_without, seed, rated_share=0.85, horizon=horizon, rule=RULE).rated


def test_a_harmful_always_on_skill_is_retired_within_45_rated_answers_a_helpful_never() -> None:
    # Harmful: users rate 10% of its answers 👍 (their noise), 75% of the answers without it.
    harmful = [retired_after(0.10, 0.75, seed) for seed in range(RUNS)]
    found = [n for n in harmful if n is not None]
    assert len(found) == RUNS  # always, in the end
    assert sum(n <= BOUND for n in found) >= 0.9 * RUNS  # 193 of the 200 seeds
    assert statistics.median(found) <= 25  # 23: most at the look near 21 rated answers
    # Helpful (85% against 50%) and neutral (75% either way) skills, checked after every
    # rated answer: the helpful never, the neutral at most alpha of the time (1 of 100).
    assert [retired_after(0.85, 0.5, s) for s in range(50)] == [None] * 50
    alarms = sum(retired_after(0.75, 0.75, s, 200) is not None for s in range(100))
    assert alarms <= RULE.alpha * 100


async def test_the_gateway_withholds_an_always_on_skill_at_the_start_share_and_retires_it(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm, skill_holdout=0.1)  # the defaults
    await plant(settings, KITCHEN, KITCHEN_DESCRIPTION, RAMBLE)
    # Every question loads the skill; its answers are rated 👍 10% of the time, others 75%.
    world = World(
        loads={"soup": KITCHEN, "tyre": KITCHEN, "cat": KITCHEN},
        queries=("A leek soup, please?", "My tyre is flat.", "A name for my cat?"),
        p_up={"RAMBLE": 0.10},
        p_base=0.75,
        seed=4,
    )
    world.install(fake_llm)
    async with gateway(settings) as gw:
        gw.parts.agent.rng = random.Random(11)
        made: list[dict[str, object]] = []
        while not made and world.turns < 60:
            await world.round(gw.parts)  # three rated answers, then a pass
            run = await gw.synthesize()
            made = [p for p in run["proposed"] if p["kind"] == "retire"]
        effect = (await gw.parts.synthesizer.effects())[KITCHEN]
        assert [p["target"] for p in made] == [KITCHEN]
        assert effect.loaded.rated + effect.without.rated <= TAIL
        assert effect.offered.rated == 0 and effect.withheld.rated >= RULE.min_evidence
        # Withheld at the start share while its comparison lagged, not at the base tenth.
        assert effect.withheld.rated >= 0.3 * (effect.loaded.rated + effect.withheld.rated)
        assert effect.verdict == "harmful"
        _, detail = await gw.call("GET", f"/proposals/{made[0]['id']}")
        assert "sequential test" in str(detail["rationale"])
