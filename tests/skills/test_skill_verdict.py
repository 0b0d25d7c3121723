"""The retirement verdict through the gateway: mild harm is caught, a neutral skill is not,
and a look once taken is not taken again, restarts included.

Rated answers are seeded in the store, a synthesis pass runs over HTTP, and what the
admins would see (a retirement proposal, the skill's verdict) is checked.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from pydantic import ValidationError

from gateway.config import Settings
from gateway.skills.effect import EffectThresholds, Tally, judge
from tests.effect_support import KITCHEN, KITCHEN_DESCRIPTION, RAMBLE, plant, seed_many
from tests.fakes.openai_server import FakeOpenAI
from tests.synthesis_support import Gateway, gateway, synth_settings


@pytest.fixture
def quiet_model(fake_llm: FakeOpenAI) -> FakeOpenAI:
    fake_llm.default = lambda body: json.dumps({"proposals": []})
    return fake_llm


async def rate(gw: Gateway, loaded: tuple[int, int], without: tuple[int, int]) -> None:
    """More rated answers: (rated, 👍) that loaded the skill, and comparable ones without it."""
    await seed_many(gw.parts.store, loaded[0], loaded[1], loaded=[KITCHEN])
    await seed_many(gw.parts.store, without[0], without[1], offered=[KITCHEN])


async def retirements(gw: Gateway) -> list[object]:
    run = await gw.synthesize()
    return [p["target"] for p in run["proposed"] if p["kind"] == "retire"]


async def test_a_mild_harm_is_retired_once_the_evidence_holds_and_not_before(
    make_settings: Callable[..., Settings], quiet_model: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, quiet_model)
    await plant(settings, KITCHEN, KITCHEN_DESCRIPTION, RAMBLE)
    async with gateway(settings) as gw:
        # 60% against 75%, a harm of exactly the margin: 40 rated answers a side are not
        # enough for the look they come to, and the skill is still measured (not settled).
        await rate(gw, (40, 24), (40, 30))
        assert await retirements(gw) == []
        effect = (await gw.parts.synthesizer.effects())[KITCHEN]
        assert effect.verdict == "unclear" and KITCHEN in gw.parts.catalog.evaluating
        # 60 more a side at the same rates (60 of 100 against 75 of 100): the design look
        # (half the false-alarm bound, z past 1.96) finds it.
        await rate(gw, (60, 36), (60, 45))
        assert await retirements(gw) == [KITCHEN]
        effect = (await gw.parts.synthesizer.effects())[KITCHEN]
        assert (effect.loaded.rated, effect.without.rated) == (100, 100)
        assert effect.verdict == "harmful" and effect.reached == "harmful"
        _, listed = await gw.call("GET", "/proposals")
        (proposal,) = [p for p in listed if p["kind"] == "retire"]
        _, detail = await gw.call("GET", f"/proposals/{proposal['id']}")
        assert "tuned to harms of 15 points" in detail["rationale"]
        assert "past the 1.96 of that look" in detail["rationale"]


async def test_a_neutral_skill_is_not_retired_however_often_it_is_judged(
    make_settings: Callable[..., Settings], quiet_model: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, quiet_model)
    await plant(settings, KITCHEN, KITCHEN_DESCRIPTION, RAMBLE)
    async with gateway(settings) as gw:
        # 75% either way, with the ups falling late on the skill's side: a pass after every
        # step, each a look, none a retirement; at 80 a side the margin is ruled out and
        # the measurement settles.
        for loaded, without in [((10, 6), (10, 8)), ((20, 14), (20, 15)), ((50, 40), (50, 37))]:
            await rate(gw, loaded, without)
            assert await retirements(gw) == []
        effect = (await gw.parts.synthesizer.effects())[KITCHEN]
        assert (effect.loaded.up, effect.without.up) == (60, 60)
        assert effect.verdict == "unclear" and KITCHEN not in gw.parts.catalog.evaluating


async def test_a_look_once_taken_is_not_taken_again_after_a_restart(
    make_settings: Callable[..., Settings], quiet_model: FakeOpenAI
) -> None:
    settings = synth_settings(make_settings, quiet_model)
    await plant(settings, KITCHEN, KITCHEN_DESCRIPTION, RAMBLE)
    async with gateway(settings) as gw:
        # 58 of 90 against 68 of 90: the design look is due, and it finds no clear harm.
        await rate(gw, (90, 58), (90, 68))
        assert await retirements(gw) == []
        before = (await gw.parts.synthesizer.effects())[KITCHEN]
        assert before.verdict == "unclear" and before.looked >= 0
        # Ten more a side, 3 against 9 👍: a first look at these counts would retire it...
        await rate(gw, (10, 3), (10, 9))
    assert judge(Tally(up=61, down=39), Tally(up=77, down=23), EffectThresholds()) == "harmful"
    async with gateway(settings) as gw:
        # ...but this look was taken before the restart, and the next is not due yet.
        assert await retirements(gw) == []
        effect = (await gw.parts.synthesizer.effects())[KITCHEN]
        assert (effect.looked, effect.verdict) == (before.looked, "unclear")
        # At 125 a side (76 against 96) the next look is due, and the harm holds there.
        await rate(gw, (25, 15), (25, 19))
        assert await retirements(gw) == [KITCHEN]
        effect = (await gw.parts.synthesizer.effects())[KITCHEN]
        assert effect.looked == before.looked + 1 and effect.verdict == "harmful"


MILD = ((150, 89), (150, 113))  # a harm the defaults retire
SMALL = ((30, 15), (30, 22))  # a larger one on less evidence, which they do not


@pytest.mark.parametrize(
    ("env", "value", "seen", "verdict"),
    [
        # A stricter bound: its looks come later and ask more (z past 3.84, not 2.5).
        ("SKILLGATE_RETIRE_FALSE_ALARMS", "0.001", MILD, "unclear"),
        # A looser one (a false alarm in three) is content with less.
        ("SKILLGATE_RETIRE_FALSE_ALARMS", "0.3", SMALL, "harmful"),
        # A wider margin: a harm of 30 points is ruled out.
        ("SKILLGATE_RETIRE_MARGIN", "0.3", MILD, "unclear"),
        ("SKILLGATE_RETIRE_MIN_EVIDENCE", "200", MILD, "collecting"),
    ],
)
async def test_the_false_alarm_bound_the_margin_and_the_minimum_are_settings(
    make_settings: Callable[..., Settings],
    quiet_model: FakeOpenAI,
    monkeypatch: pytest.MonkeyPatch,
    env: str,
    value: str,
    seen: tuple[tuple[int, int], tuple[int, int]],
    verdict: str,
) -> None:
    monkeypatch.setenv(env, value)
    settings = synth_settings(make_settings, quiet_model)
    await plant(settings, KITCHEN, KITCHEN_DESCRIPTION, RAMBLE)
    async with gateway(settings) as gw:
        await rate(gw, *seen)
        assert await retirements(gw) == ([KITCHEN] if verdict == "harmful" else [])
        assert (await gw.parts.synthesizer.effects())[KITCHEN].verdict == verdict
    loaded, without = (Tally(up=up, down=n - up) for n, up in seen)
    assert judge(loaded, without, EffectThresholds()) == ("unclear" if seen == SMALL else "harmful")


@pytest.mark.parametrize("env", ["SKILLGATE_RETIRE_MARGIN", "SKILLGATE_RETIRE_FALSE_ALARMS"])
def test_a_margin_or_bound_of_zero_is_refused_by_name(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch, env: str
) -> None:
    # A margin of 0 leaves the test no scale, a bound of 0 can never be met: refused at start.
    monkeypatch.setenv(env, "0")
    with pytest.raises(ValidationError, match=f"{env}\n.*greater than 0"):
        make_settings()


def test_the_rule_catches_the_mild_harm_the_earlier_one_missed() -> None:
    # 60 of 100 against 75 of 100: the mixture test of before needed 150 a side.
    loaded, without = Tally(up=60, down=40), Tally(up=75, down=25)
    assert judge(loaded, without, EffectThresholds()) == "harmful"
    # Far more ratings of a small, certain harm (70% against 75%) are not worth a retirement.
    small = judge(Tally(up=1400, down=600), Tally(up=1500, down=500), EffectThresholds())
    assert small == "unclear"
