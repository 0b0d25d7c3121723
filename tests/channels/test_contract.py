"""The contract every channel passes: the same conversation, whatever the platform.

Each test runs once per channel (`DRIVERS`), on the real app over HTTP with the
platform's loopback fake and the fake model. The `rig` fixture is the platform: a
platform's own test module imports this one and overrides `rig` to run it on itself
(tests/channels/loopchat/test_loopchat_contract.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest
from prometheus_client.parser import text_string_to_metric_families

from gateway.channels.registry import platforms
from gateway.config import Settings
from gateway.conversation.review import NOT_ALLOWED
from gateway.store.postgres import PostgresStore
from tests.channels.drivers import DRIVERS, RIGS, Driver, Rig
from tests.fakes.openai_server import FakeOpenAI


@pytest.fixture(params=DRIVERS)
def rig(request: pytest.FixtureRequest) -> Rig:
    """The platform under test."""
    return RIGS[request.param]


@pytest.fixture
async def chat(
    rig: Rig, make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> AsyncIterator[Driver]:
    async with rig(make_settings, fake_llm) as driver:
        yield driver


async def metrics(chat: Driver) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    resp = await chat.client.get("/metrics")
    assert resp.status == 200
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(await resp.text())
        for s in family.samples
    }


def sample(name: str, **labels: str) -> tuple[str, frozenset[tuple[str, str]]]:
    return name, frozenset(labels.items())


async def test_a_text_is_answered_with_rating_buttons_for_the_stored_answer(
    chat: Driver, fake_llm: FakeOpenAI
) -> None:
    fake_llm.reply("Paris.")
    await chat.say("What is the capital of France?")
    assert chat.texts()[-1] == "Paris."
    up, down = chat.rating_data()
    answer_id = int(up.split(":")[1])
    assert (up, down) == (f"rate:{answer_id}:+1", f"rate:{answer_id}:-1")
    stored = await chat.parts.store.get_message(answer_id)
    assert stored is not None and stored.text == "Paris." and stored.platform_message_ids
    assert fake_llm.requests[-1]["messages"][-1]["content"] == "What is the capital of France?"


async def test_answers_latency_and_model_errors_are_counted_in_metrics(
    chat: Driver, fake_llm: FakeOpenAI
) -> None:
    fake_llm.reply("First answer.")
    await chat.say("hello")
    fake_llm.error(500, times=3)  # the model fails, retries included
    await chat.say("are you there?", user=chat.other)
    m = await metrics(chat)
    name = chat.name
    assert m[sample("skillgate_updates_received_total", channel=name)] == 2
    assert m[sample("skillgate_answers_total", channel=name, kind="normal")] == 1
    assert m[sample("skillgate_answers_total", channel=name, kind="error")] == 1
    assert m[sample("skillgate_model_errors_total", channel=name)] == 1
    assert m[sample("skillgate_answer_latency_seconds_count", channel=name)] == 2
    assert m[sample("skillgate_answer_latency_seconds_sum", channel=name)] > 0


async def test_the_same_update_twice_is_answered_once(chat: Driver, fake_llm: FakeOpenAI) -> None:
    fake_llm.reply("Once.")
    await chat.say("hi")
    assert (await chat.redeliver_last()).status == 200
    assert chat.texts() == ["Once."]
    assert len(fake_llm.requests) == 1


async def test_a_webhook_that_fails_verification_is_401_and_changes_nothing(
    chat: Driver, fake_llm: FakeOpenAI
) -> None:
    assert (await chat.forged()).status == 401
    assert await chat.parts.store.inbox_pending_count() == 0
    assert chat.texts() == [] and fake_llm.requests == []


async def test_help_and_new_say_the_channels_words_and_new_starts_a_fresh_session(
    chat: Driver, fake_llm: FakeOpenAI
) -> None:
    await chat.say("/help")
    assert chat.texts()[-1] == chat.dialect.help
    fake_llm.reply("One.")
    await chat.say("first")
    await chat.say("/new")
    assert chat.texts()[-1] == chat.dialect.new
    fake_llm.reply("Two.")
    await chat.say("second")
    assert [m["content"] for m in fake_llm.requests[-1]["messages"][1:]] == ["second"]
    assert len(fake_llm.requests) == 2


async def test_thumbs_up_then_down_keeps_one_rating_and_the_answer_to_the_question(
    chat: Driver, fake_llm: FakeOpenAI
) -> None:
    fake_llm.reply("A long answer.")
    await chat.say("question")
    up, down = chat.rating_data()
    await chat.press(up)
    await chat.press(down)
    await chat.answer_question("too long")
    fake_llm.reply("Next.")
    await chat.say("a normal question again")
    feedback = await chat.parts.store.list_feedback(limit=10, offset=0)
    assert [(f.rating, f.comment) for f in feedback] == [(-1, "too long")]
    assert chat.texts()[-2] == chat.dialect.thanks_for_comment
    assert chat.texts()[-1] == "Next."
    assert len(fake_llm.requests) == 2


async def test_a_press_from_another_chat_rates_nothing(chat: Driver, fake_llm: FakeOpenAI) -> None:
    fake_llm.reply("Mine.")
    await chat.say("question")
    up, _ = chat.rating_data()
    fake_llm.reply("Theirs.")
    await chat.say("question", user=chat.other)
    await chat.press(up, user=chat.other)
    assert await chat.parts.store.list_feedback(limit=10, offset=0) == []


async def test_in_a_group_only_what_is_addressed_to_the_bot_is_answered(
    chat: Driver, fake_llm: FakeOpenAI
) -> None:
    await chat.say("people talking among themselves", group=True, addressed=False)
    assert fake_llm.requests == []
    fake_llm.reply("Hello, group.")
    await chat.say("hello bot", group=True)
    assert len(fake_llm.requests) == 1
    assert fake_llm.requests[0]["messages"][-1]["content"] == "hello bot"


async def test_with_an_allowlist_others_are_refused_without_asking_the_model(
    rig: Rig, make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with rig(make_settings, fake_llm, only_other=True) as chat:
        await chat.say("hello")
        assert chat.texts() == [chat.dialect.refusal.format(user_id=chat.user)]
        assert fake_llm.requests == []


async def test_review_commands_from_someone_who_is_no_admin_change_nothing(
    chat: Driver, fake_llm: FakeOpenAI
) -> None:
    for command in ("/proposals", "/skills", "/synthesize"):
        await chat.say(command)
        assert chat.texts()[-1] == NOT_ALLOWED
    assert fake_llm.requests == []
    assert await chat.parts.store.list_runs(5) == []


async def test_a_replica_whose_claim_was_taken_over_sends_nothing(
    rig: Rig, make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, postgres_url: str
) -> None:
    """Stalled while the model answered, the update taken over meanwhile: not a word."""
    async with rig(make_settings, fake_llm, database_url=postgres_url) as chat:
        fake_llm.reply("Late answer.")
        fake_llm.pause()
        saying = asyncio.create_task(chat.say("hello"))
        await fake_llm.wait_for_requests(1)
        store = chat.parts.store
        assert isinstance(store, PostgresStore)
        async with store.connection() as conn:  # what another replica's claim does
            await conn.execute(
                "update inbox set claimed_by = 'another-replica', claim = claim + 1,"
                " lease_until = extract(epoch from now()) + 600 where processed_at is null"
            )
        fake_llm.resume()
        await saying
        assert chat.texts() == []
        assert await store.inbox_pending_count() == 1  # the other replica's to answer


def test_every_built_in_platform_has_a_rig_here() -> None:
    assert set(RIGS) == {p.name for p in platforms()}
