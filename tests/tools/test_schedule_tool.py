"""The model's `schedule` tool and agent tasks, on Telegram and LINE, on a clock the test
holds: the scripted tool call makes the task for the user who asked, who is shown it with
its next time in their timezone and a Cancel button; when due, an agent task is answered
by the agent through the same turn as a message (its request to the model, the chat's
persona, the answer with 👍/👎, rated like any other answer), and the task moves to its
next time; a reminder made by the tool says its text without rating buttons; the answer of
a task cannot schedule more tasks; bad calls are refused with why, and nothing is made."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from gateway.config import Settings
from gateway.runtime.keys import TASKS
from gateway.runtime.schedule import TaskWorker
from tests.channels.drivers import DRIVERS, Driver, LineDriver, running
from tests.fakes.openai_server import FakeOpenAI
from tests.tools.support import last_trace, tool_names, tools_file

TOKYO = ZoneInfo("Asia/Tokyo")
NOW = datetime(2026, 12, 7, 14, 30, tzinfo=TOKYO).timestamp()
"""A Monday, 14:30 in Tokyo."""
HEADLINES = "the three top headlines about tea"


def at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=TOKYO).timestamp()


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock(NOW)


@pytest.fixture(params=DRIVERS)
async def chat(
    request: pytest.FixtureRequest,
    make_settings: Callable[..., Settings],
    fake_llm: FakeOpenAI,
    tmp_path: Path,
    clock: Clock,
) -> AsyncIterator[Driver]:
    path = tools_file(tmp_path, schedule={})
    async with running(
        request.param, make_settings, fake_llm, clock=clock, tools_file=path
    ) as driver:
        yield driver


def worker(chat: Driver) -> TaskWorker:
    return chat.client.app[TASKS]


async def run_due(chat: Driver) -> None:
    """One round of the task worker at the test's time, and every delivery it started."""
    task_worker = worker(chat)
    await task_worker.tick()
    await task_worker.wait_idle()


async def test_an_agent_task_is_made_by_the_tool_then_answered_by_the_agent_with_ratings(
    chat: Driver, fake_llm: FakeOpenAI, clock: Clock
) -> None:
    await chat.say("/timezone Asia/Tokyo")
    fake_llm.tool_call(
        "schedule", when="tomorrow 08:00", what=HEADLINES, repeat="daily", kind="agent"
    )
    fake_llm.reply("Done: every morning at 8.")
    await chat.say("every day at 8, send me the three top headlines about tea")
    texts = chat.texts()
    confirmation = (
        "🗓 I'll answer this every day, first at 2026-12-08 08:00 Asia/Tokyo: " + HEADLINES
    )
    assert confirmation in texts
    assert texts[-1] == "Done: every morning at 8."
    assert "schedule" in tool_names(fake_llm.requests[0])
    told = fake_llm.requests[1]["messages"][-1]["content"]
    assert "scheduled (agent, daily), first at 2026-12-08 08:00 Asia/Tokyo" in told
    [task] = await chat.parts.store.tasks_of(chat.name, chat.user, chat.user)
    assert (task.kind, task.repeat, task.cron, task.next_at, task.timezone) == (
        "agent",
        "daily",
        "0 8 * * *",
        at("2026-12-08 08:00"),
        "Asia/Tokyo",
    )
    trace = await last_trace(chat.parts.store)
    [call] = trace.tool_calls
    assert (call.tool, call.status) == ("schedule", "ok")
    assert json.loads(call.arguments)["kind"] == "agent"

    await run_due(chat)  # not due yet
    assert len(fake_llm.requests) == 2

    persona = "Answer like a tea merchant."
    await chat.parts.store.set_chat_persona(chat.name, chat.user, persona, "test", NOW)
    clock.now = at("2026-12-08 08:00") + 5
    fake_llm.reply("1. Tea prices rise. 2. A new green tea. 3. Tea festival opens.")
    await run_due(chat)
    assert len(fake_llm.requests) == 3
    asked = fake_llm.requests[2]
    assert asked["messages"][-1]["content"] == HEADLINES  # the request, as a user's message
    assert "schedule" not in tool_names(asked)  # an answer of a task makes no more tasks
    assert persona in fake_llm.system_prompt(2)  # the chat's persona, as in any turn
    assert chat.texts()[-1] == "1. Tea prices rise. 2. A new green tea. 3. Tea festival opens."
    up, down = chat.rating_data()
    assert up.endswith(":+1") and down.endswith(":-1")
    [task] = await chat.parts.store.tasks_of(chat.name, chat.user, chat.user)
    assert task.next_at == at("2026-12-09 08:00")
    [run] = await chat.parts.store.task_runs(task.id)
    assert run.outcome == "sent"

    await chat.press(up)  # rated like any other answer
    [feedback] = await chat.parts.store.list_feedback()
    assert (feedback.rating, feedback.user_id) == (1, chat.user)
    # What synthesis reads: the request as the user's message, the answer, its rating.
    answer = await chat.parts.store.get_message(feedback.message_id)
    assert answer is not None
    *_, request, rated = await chat.parts.store.session_transcript(answer.session_id)
    assert (request.message.role, request.message.text) == ("user", HEADLINES)
    assert rated.message.id == answer.id and [f.rating for f in rated.feedback] == [1]


async def test_a_reminder_made_by_the_tool_says_its_text_and_is_cancelled_with_its_button(
    chat: Driver, fake_llm: FakeOpenAI, clock: Clock
) -> None:
    fake_llm.tool_call("schedule", when="2026-12-07T18:00:00", what="call the bank")
    fake_llm.reply("I'll remind you.")
    await chat.say("remind me at six to call the bank")
    # In the default timezone, which the user is asked about with their first task.
    confirmation = "⏰ I'll remind you at 2026-12-07 18:00 UTC: call the bank\n\nTimes are in UTC."
    assert [t for t in chat.texts() if t.startswith(confirmation)]
    [task] = await chat.parts.store.tasks_of(chat.name, chat.user, chat.user)
    assert (task.kind, task.repeat, task.next_at) == ("reminder", "once", at("2026-12-08 03:00"))
    [cancel] = [data for data in chat.button_data() if data[0].startswith("tk:")]

    clock.now = task.next_at
    with_buttons = len(chat.button_data())
    await run_due(chat)
    assert chat.texts()[-1] == "⏰ call the bank"
    assert len(fake_llm.requests) == 2  # a reminder asks no model
    assert len(chat.button_data()) == with_buttons  # and carries no 👍/👎

    fake_llm.tool_call("schedule", when="in 2h", what="stretch")
    fake_llm.reply("Noted.")
    await chat.say("remind me to stretch in two hours")
    [*_, cancel] = [data for data in chat.button_data() if data[0].startswith("tk:")]
    await chat.press(cancel[0])
    assert chat.texts()[-1] == "Cancelled: stretch"
    assert await chat.parts.store.tasks_of(chat.name, chat.user, chat.user) == []


@pytest.mark.parametrize(
    ("arguments", "why"),
    [
        ({"when": "someday", "what": "tea"}, "`when` is not understood"),
        ({"when": "2026-12-01 10:00", "what": "tea"}, "that time has already passed"),
        ({"when": "in 10m", "what": "tea", "repeat": "daily"}, "a repeat needs a clock time"),
        ({"when": "in 10m", "what": ""}, "`what` must be 1 to 2000 characters"),
        ({"when": "in 10m", "what": "tea", "repeat": "hourly"}, "repeat is one of once"),
        ({"when": "in 10m", "what": "tea", "kind": "script"}, "kind is 'reminder' or 'agent'"),
        ({"when": "3時", "what": "tea"}, "could be morning or evening"),
        ({"when": "明日 9:00 お茶", "what": "お茶"}, "`when` is not understood"),  # time alone
    ],
)
async def test_a_call_that_cannot_be_made_is_refused_with_why_and_makes_nothing(
    chat: Driver, fake_llm: FakeOpenAI, arguments: dict[str, str], why: str
) -> None:
    fake_llm.tool_call("schedule", **arguments)
    fake_llm.reply("Sorry, I could not set that.")
    await chat.say("remind me")
    assert chat.texts()[-1] == "Sorry, I could not set that."
    trace = await last_trace(chat.parts.store)
    [call] = trace.tool_calls
    assert call.status == "refused" and why in (call.detail or "")
    assert "it is now 2026-12-07 05:30 in the person's timezone UTC" in (call.detail or "") or (
        why.startswith(("`what`", "repeat", "kind"))
    )
    assert await chat.parts.store.tasks_of(chat.name, chat.user, chat.user) == []


@pytest.mark.parametrize(
    ("when", "repeat", "first"),
    [
        ("明日の午後3時", "once", "2026-12-08 15:00"),
        ("毎日 8:00", "daily", "2026-12-08 08:00"),
        ("8:00", "weekdays", "2026-12-08 08:00"),
        ("明天 上午9點", "once", "2026-12-08 09:00"),
        ("พรุ่งนี้ 9 โมง", "once", "2026-12-08 09:00"),
    ],
)
async def test_when_in_the_persons_own_language_is_understood(
    chat: Driver, fake_llm: FakeOpenAI, when: str, repeat: str, first: str
) -> None:
    await chat.say("/timezone Asia/Tokyo")
    fake_llm.tool_call("schedule", when=when, what="PM review", repeat=repeat)
    fake_llm.reply("OK.")
    await chat.say("remind me")
    [task] = await chat.parts.store.tasks_of(chat.name, chat.user, chat.user)
    # `what` is kept whole: "PM" is not read as a part of the day.
    assert (task.text, task.repeat, task.next_at) == ("PM review", repeat, at(first))


async def test_a_repeat_sooner_than_the_shortest_allowed_is_refused_with_why(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, tmp_path: Path, clock: Clock
) -> None:
    path = tools_file(tmp_path, schedule={})
    async with running(
        "telegram",
        make_settings,
        fake_llm,
        clock=clock,
        tools_file=path,
        task_min_repeat_minutes=2880,
    ) as chat:
        fake_llm.tool_call("schedule", when="tomorrow 08:00", what="tea", repeat="weekdays")
        fake_llm.reply("That is too often here.")
        await chat.say("remind me every weekday at 8 about tea")
        assert chat.texts()[-1] == "That is too often here."
        trace = await last_trace(chat.parts.store)
        [call] = trace.tool_calls
        assert call.status == "refused"
        assert "repeats after 1440 minutes at times; the shortest repeat allowed is 2880" in (
            call.detail or ""
        )
        assert await chat.parts.store.tasks_of(chat.name, chat.user, chat.user) == []


async def agent_task_in_2h(chat: Driver, fake_llm: FakeOpenAI) -> float:
    """An agent task made by the tool, due at 07:30 UTC today; its due time."""
    fake_llm.tool_call("schedule", when="in 2h", what=HEADLINES, kind="agent")
    fake_llm.reply("Will do.")
    await chat.say("in two hours, the tea headlines please")
    [task] = await chat.parts.store.tasks_of(chat.name, chat.user, chat.user)
    return task.next_at or 0.0


async def test_an_agent_task_that_comes_late_says_so_first_and_a_missed_one_asks_no_model(
    chat: Driver, fake_llm: FakeOpenAI, clock: Clock
) -> None:
    due = await agent_task_in_2h(chat, fake_llm)
    clock.now = due + 600  # ten minutes late, within the hour's grace
    fake_llm.reply("Here they are.")
    await run_due(chat)
    late = "🗓 Late: the bot was offline at 2026-12-07 07:30 UTC. Here is the answer to: "
    assert chat.texts()[-2:] == [late + HEADLINES, "Here they are."]
    [run] = await chat.parts.store.task_runs((await agent_task_ids(chat))[0])
    assert run.outcome == "late"

    fake_llm.tool_call("schedule", when="in 1h", what="the weather", kind="agent")
    fake_llm.reply("Sure.")
    await chat.say("in an hour, the weather")
    [*_, weather] = await agent_task_ids(chat)
    clock.now += 3600 + 2 * 3600  # two hours past its time: missed
    asked = len(fake_llm.requests)
    await run_due(chat)
    assert len(fake_llm.requests) == asked
    assert chat.texts()[-1].startswith("⏰ Missed while the bot was offline (")
    assert [r.outcome for r in await chat.parts.store.task_runs(weather)] == ["missed"]


async def agent_task_ids(chat: Driver) -> list[int]:
    rows = await chat.parts.store.tasks_list(finished=True)
    return sorted(t.id for t in rows if t.kind == "agent")


async def test_an_agent_tasks_answer_counts_against_the_users_daily_answers(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, tmp_path: Path, clock: Clock
) -> None:
    path = tools_file(tmp_path, schedule={})
    async with running(
        "telegram", make_settings, fake_llm, clock=clock, tools_file=path, user_daily_answers=1
    ) as chat:
        due = await agent_task_in_2h(chat, fake_llm)  # the day's one answer
        clock.now = due
        asked = len(fake_llm.requests)
        await run_due(chat)
        assert len(fake_llm.requests) == asked  # over the user's limit: no model asked
        assert chat.texts()[-1].startswith("You have reached today's limit")


async def test_past_the_most_tasks_the_call_is_refused_with_why(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, tmp_path: Path, clock: Clock
) -> None:
    path = tools_file(tmp_path, schedule={})
    async with running(
        "line", make_settings, fake_llm, clock=clock, tools_file=path, user_max_tasks=1
    ) as chat:
        await chat.say("/remind in 10m tea")
        fake_llm.tool_call("schedule", when="in 2h", what=HEADLINES, kind="agent")
        fake_llm.reply("You have too many tasks; cancel one with /tasks.")
        await chat.say("in two hours, the tea headlines please")
        trace = await last_trace(chat.parts.store)
        [call] = trace.tool_calls
        assert call.status == "refused" and "SKILLGATE_USER_MAX_TASKS" in (call.detail or "")
        held = await chat.parts.store.tasks_of(chat.name, chat.user, chat.user)
        assert [t.kind for t in held] == ["reminder"]


async def test_in_a_group_the_call_follows_the_groups_rule(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, tmp_path: Path, clock: Clock
) -> None:
    path = tools_file(tmp_path, schedule={"groups": "allow"})
    settings = {"tools_file": path, "group_tasks": "admins", "telegram_admin_ids": [1002]}
    async with running("telegram", make_settings, fake_llm, clock=clock, **settings) as chat:
        for user in (chat.user, chat.other):
            fake_llm.tool_call("schedule", when="in 2h", what="stand-up")
            fake_llm.reply("Done or not.")
            await chat.say("remind us of the stand-up in two hours", user=user, group=True)
        statuses = [c.status for c in (await last_trace(chat.parts.store)).tool_calls]
        made = await chat.parts.store.tasks_list()
    assert [(t.user_id, t.text) for t in made] == [(chat.other, "stand-up")]  # the admin's
    assert statuses == ["ok"]
    refused = [r for r in fake_llm.requests if "SKILLGATE_GROUP_TASKS" in str(r["messages"])]
    assert refused  # the model was told why the member's call was refused


async def test_on_line_a_task_past_the_months_push_quota_is_refused_with_why(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, tmp_path: Path, clock: Clock
) -> None:
    path = tools_file(tmp_path, schedule={})
    async with running("line", make_settings, fake_llm, clock=clock, tools_file=path) as chat:
        assert isinstance(chat, LineDriver)
        chat.rig.fake.quota_limit = 10
        fake_llm.tool_call("schedule", when="08:00", what=HEADLINES, kind="agent", repeat="daily")
        fake_llm.reply("This month's messages would run out; a one-time task fits.")
        await chat.say("every day at 8, send me the three top headlines about tea")
        # 05:30 UTC now: from 08:00 today to December 31, 25 pushes, 10 left.
        assert chat.texts()[-2:] == [
            "This can't be scheduled: the bot's messages for this month would run out. 10 are"
            " left, the tasks already set need 0 and this one would need 25. Cancel a task"
            " with /tasks, or set it for next month.",
            "This month's messages would run out; a one-time task fits.",
        ]
        [call] = (await last_trace(chat.parts.store)).tool_calls
        assert call.status == "refused" and "monthly push quota" in (call.detail or "")
        assert await chat.parts.store.tasks_of(chat.name, chat.user, chat.user) == []
        fake_llm.tool_call("schedule", when="in 2h", what=HEADLINES, kind="agent")
        fake_llm.reply("Will do.")
        await chat.say("then in two hours")
        [task] = await chat.parts.store.tasks_of(chat.name, chat.user, chat.user)
        assert task.kind == "agent" and task.repeat == "once"
