"""Tool calls in the effect measurement: calls and failures per answer with and without each
skill, counted in the store (both databases), judged like ratings, shown and flagged on the
skill's console page."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from gateway.config import Settings
from gateway.core.records import SkillRecord
from gateway.skills.effect import EffectThresholds, SkillTallies, ToolTally, measure, tools_fail
from gateway.skills.library import Skill, render_skill
from gateway.store import Store
from tests.console_support import sign_in
from tests.effect_support import BIKE, BIKE_DESCRIPTION, CRISP, plant, seed_answer
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import make_text_update
from tests.telegram_harness import telegram_gateway
from tests.tools.http_server import ToyServer
from tests.tools.support import last_trace, tools_file

RULE = EffectThresholds(min_evidence=20, margin=0.15)


def tools(calling: int, failing: int, answers: int | None = None) -> ToolTally:
    """Answers that each called one tool, `failing` of them unsuccessfully."""
    return ToolTally(
        answers=calling if answers is None else answers,
        calling=calling,
        failing=failing,
        calls=calling,
        failed=failing,
    )


def test_a_skill_whose_answers_fail_tools_reliably_more_often_is_flagged() -> None:
    assert tools_fail(tools(60, 30), tools(60, 6), RULE)


def test_too_few_tool_calls_or_a_gap_below_the_margin_or_chance_is_not_flagged() -> None:
    assert not tools_fail(tools(10, 10), tools(10, 0), RULE)  # under the minimum evidence
    assert not tools_fail(tools(2000, 500), tools(2000, 300), RULE)  # 10 points: under 15
    assert not tools_fail(tools(20, 8), tools(20, 4), RULE)  # 20 points, but chance explains it
    assert not tools_fail(tools(60, 6), tools(60, 30), RULE)  # fewer failures: not flagged


def test_the_comparison_pools_offered_only_and_withheld_answers_for_tools_too() -> None:
    tallies = SkillTallies(
        name="s",
        content_hash="h",
        tools_loaded=tools(40, 20, answers=50),
        tools_offered=tools(20, 2, answers=80),
        tools_withheld=tools(20, 2, answers=20),
    )
    effect = measure(tallies, RULE)
    assert effect.fails_tools
    assert effect.tools_without.answers == 100 and effect.tools_without.calling == 40
    assert effect.tool_difference is not None and round(effect.tool_difference, 2) == 0.4
    assert effect.tool_difference_low is not None and effect.tool_difference_low > 0
    summary = effect.summary()["tools"]
    assert summary["loaded"]["calls_per_answer"] == 0.8
    assert summary["without"]["failing_rate"] == 0.1 and summary["fails_tools"] is True


def record(slug: str) -> SkillRecord:
    return SkillRecord(
        slug=slug, source="custom", content_hash="h1", created_at=0.0, updated_at=0.0
    )


async def test_every_answer_counts_its_tool_calls_and_failures_in_each_arm(
    any_store: Store,
) -> None:
    await any_store.put_skill_records([record("soup"), record("bikes")])
    await seed_answer(any_store, loaded=["soup"], tool_calls=["ok", "error"], ratings=())
    await seed_answer(any_store, loaded=["soup"], tool_calls=["timeout"], ratings=(1,))
    await seed_answer(any_store, loaded=["soup"], ratings=(-1,))  # no tool call
    await seed_answer(any_store, loaded=["bikes"], offered=["soup"], tool_calls=["ok"], ratings=())
    # Refused and declined calls are decisions, not failures.
    await seed_answer(any_store, offered=["soup"], tool_calls=["refused", "declined"], ratings=())
    await seed_answer(any_store, withheld=["soup"], tool_calls=["unavailable"], ratings=())
    await seed_answer(any_store, loaded=["soup"], kind="error", tool_calls=["error"], ratings=())

    tallies = await any_store.skill_tallies()
    soup = tallies["soup"]
    assert soup.tools_loaded == ToolTally(answers=3, calling=2, failing=2, calls=3, failed=2)
    assert soup.tools_offered == ToolTally(answers=2, calling=2, failing=0, calls=3, failed=0)
    assert soup.tools_withheld == ToolTally(answers=1, calling=1, failing=1, calls=1, failed=1)
    assert tallies["bikes"].tools_loaded == ToolTally(answers=1, calling=1, calls=1)
    # The ratings' tallies are unchanged by the tool counts.
    assert (soup.loaded.answers, soup.loaded.up, soup.loaded.down) == (3, 1, 1)


async def test_the_skill_page_shows_tool_calls_with_and_without_it_and_flags_failing_tools(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    settings = make_settings(
        llm_base_url=fake_llm.base_url, llm_model="fake-model", admin_token="admin-secret-token"
    )
    await plant(settings, BIKE, BIKE_DESCRIPTION, CRISP)
    async with telegram_gateway(make_settings, fake_llm) as gw:  # 5 answers each, 15 points
        store = gw.parts.store
        for i in range(12):
            await seed_answer(store, loaded=[BIKE], tool_calls=["error" if i < 9 else "ok"])
            await seed_answer(store, offered=[BIKE], tool_calls=["error" if i < 1 else "ok"])
        await sign_in(gw.client, "admin-secret-token")
        flagged = await (await gw.client.get(f"/admin/skills/{BIKE}")).text()
        for _ in range(24):
            await seed_answer(store, offered=[BIKE], tool_calls=["error"])
        even = await (await gw.client.get(f"/admin/skills/{BIKE}")).text()
    assert 'id="tool-effect"' in flagged and 'id="fails-tools"' in flagged
    assert "75% against 8%" in flagged
    assert "9 of 12" in flagged and "1 of 12" in flagged
    assert 'id="tool-effect"' in even and 'id="fails-tools"' not in even  # 75% against 69%


async def test_a_real_answer_that_loads_the_skill_and_fails_a_tool_is_counted_on_its_page(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    settings = make_settings()
    folder = settings.skills_dir / "echo-back"
    folder.mkdir(parents=True)
    skill = Skill(
        name="echo-back",
        description="Repeating: use when someone asks to have their words said back.",
        body="Call toy__echo with the words.",
        allowed_tools=["toy__echo"],
    )
    (folder / "SKILL.md").write_text(render_skill(skill), encoding="utf-8")
    fake_llm.tool_call("load_skill", name="echo-back")
    fake_llm.tool_call("toy__echo")  # no text: the server answers with an error
    fake_llm.reply("Sorry, the echo failed.")
    async with ToyServer().running() as toy:
        path = tools_file(tmp_path, servers={"toy": {"url": toy.url, "trusted": True}})
        async with telegram_gateway(make_settings, fake_llm, tools_file=path) as gw:
            await gw.deliver(make_text_update(1, "Say back: hello"))
            trace = await last_trace(gw.parts.store)
            await sign_in(gw.client, "admin-secret-token")
            page = await (await gw.client.get("/admin/skills/echo-back")).text()
    assert trace.skills_loaded == ["echo-back"]
    assert [(c.tool, c.status) for c in trace.tool_calls] == [("echo", "error")]
    row = page.split('data-label="answers">with it</td>', 1)[1].split("</tr>", 1)[0]
    assert 'data-label="how many">1</td>' in row
    assert 'data-label="failed calls per answer">1.00</td>' in row
    assert "100% (1 of 1," in row
