"""Simulated users and a scripted model: harmful skills draw a retirement, helpful ones do not."""

from __future__ import annotations

import random
from collections.abc import Callable

from gateway.config import Settings
from tests.effect_support import (
    BIKE,
    BIKE_DESCRIPTION,
    CRISP,
    KITCHEN,
    KITCHEN_DESCRIPTION,
    RAMBLE,
    World,
    plant,
)
from tests.fakes.openai_server import FakeOpenAI
from tests.synthesis_support import Gateway, gateway, synth_settings

# With 👍 at 15% when the harmful skill shaped the answer and about 65-90% otherwise, the
# default rule (5 rated answers each side, 15 points, the sequential test at 5%) proposes
# the retirement within a few passes. The claim tested: within 30 rated exposures.
EXPOSURE_BOUND = 30
MAX_ROUNDS = 8  # 12 rated answers a round, about 4 of them loading each planted skill


async def retirements(gw: Gateway) -> list[dict[str, object]]:
    _, listed = await gw.call("GET", "/proposals")
    return [p for p in listed if p["kind"] == "retire"]


async def planted_world(settings: Settings, fake_llm: FakeOpenAI, **world: object) -> World:
    await plant(settings, KITCHEN, KITCHEN_DESCRIPTION, RAMBLE)
    await plant(settings, BIKE, BIKE_DESCRIPTION, CRISP)
    sim = World(**world)  # type: ignore[arg-type]
    sim.install(fake_llm)
    return sim


async def test_a_harmful_skill_draws_a_retirement_within_the_bound_and_a_helpful_one_never(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm, skill_holdout=0.1)  # the default
    world = await planted_world(settings, fake_llm)
    async with gateway(settings) as gw:
        gw.parts.agent.rng = random.Random(3)
        made: list[dict[str, object]] = []
        for _ in range(MAX_ROUNDS):
            await world.round(gw.parts, times=4)
            made = [p for p in (await gw.synthesize())["proposed"] if p["kind"] == "retire"]
            if made:
                break
        kitchen = (await gw.parts.synthesizer.effects())[KITCHEN]
        assert [(p["target"], p["status"]) for p in made] == [(KITCHEN, "pending")]
        assert 5 <= kitchen.loaded.rated <= EXPOSURE_BOUND
        assert kitchen.verdict == "harmful"
        # Holdout turns went without the skills under evaluation, and count as comparisons.
        assert kitchen.withheld.answers > 0

        # The helpful skill, with more evidence than that, is never proposed for retirement;
        # it is judged helpful at a later look, once it has more evidence.
        for _ in range(MAX_ROUNDS):
            await world.round(gw.parts, times=4)
            await gw.synthesize()
            bike = (await gw.parts.synthesizer.effects())[BIKE]
            if bike.verdict == "helpful":
                break
        assert bike.loaded.rated > kitchen.loaded.rated and bike.verdict == "helpful"
        assert [p["target"] for p in await retirements(gw)] == [KITCHEN]  # and not twice
        # Once both have their evidence, holdout ends for them.
        assert {KITCHEN, BIKE}.isdisjoint(gw.parts.catalog.evaluating)


async def test_nothing_is_proposed_without_the_minimum_evidence(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, fake_llm, skill_holdout=0.1)  # the default
    # Users always rate the harmful skill's answers down and every other answer up.
    world = await planted_world(settings, fake_llm, p_up={"RAMBLE": 0.0, "CRISP": 1.0}, p_base=1.0)
    async with gateway(settings) as gw:
        gw.parts.agent.rng = random.Random(5)
        # A round asks each question once, so exposures grow one at a time.
        least = settings.retire_min_evidence
        while (await gw.parts.synthesizer.effects())[KITCHEN].loaded.rated < least - 1:
            await world.round(gw.parts)
        run = await gw.synthesize()
        assert [p for p in run["proposed"] if p["kind"] == "retire"] == []
        kitchen = (await gw.parts.synthesizer.effects())[KITCHEN]
        assert (kitchen.loaded.up, kitchen.loaded.down) == (0, least - 1)
        assert kitchen.verdict == "collecting"
        assert kitchen.without.rated >= least and kitchen.without.rate == 1.0
        # One more rated exposure reaches the minimum, and the retirement follows.
        while (await gw.parts.synthesizer.effects())[KITCHEN].loaded.rated < least:
            await world.round(gw.parts)
        run = await gw.synthesize()
        assert [p["target"] for p in run["proposed"] if p["kind"] == "retire"] == [KITCHEN]
