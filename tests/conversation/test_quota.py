"""Daily quotas: per user, per group chat and for the gateway, before any model call.

The counts live in the database and are raised atomically, so a limit holds across a
restart and across two replicas on one PostgreSQL database.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from gateway.config import Settings
from gateway.core.records import QuotaCheck
from gateway.store import Store
from gateway.store.postgres import PostgresStore
from tests.fakes.line_api import text_event
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import make_text_update, mention_entity
from tests.line_support import REPLY, line_rig
from tests.pg_support import database
from tests.store_support import quota_counts
from tests.telegram_harness import telegram_gateway

__all__ = ["database"]  # a fixture

DAY = "2026-05-01"
USER = QuotaCheck("user", "telegram:1001", answers=2)
GATEWAY = QuotaCheck("gateway", "", tokens=1000)
RESETS = re.compile(r"resets at 00:00 UTC, in \d+ h \d+ min\.$")
GROUP = -1009876543210


async def test_an_answer_is_admitted_under_every_count_or_under_none(any_store: Store) -> None:
    assert await any_store.quota_admit(DAY, [USER, GATEWAY]) is None
    assert await any_store.quota_admit(DAY, [USER, GATEWAY]) is None
    refused = await any_store.quota_admit(DAY, [USER, GATEWAY])
    assert refused == USER
    counts = {(c.scope, c.subject): c.answers for c in await quota_counts(any_store, DAY)}
    # The refused answer raised neither count: the transaction rolled both back.
    assert counts == {("user", "telegram:1001"): 2, ("gateway", ""): 2}

    other = QuotaCheck("user", "telegram:2002", answers=5)
    await any_store.quota_spend(DAY, [("gateway", "", 0)], tokens=1000, cost=0.0)
    assert await any_store.quota_admit(DAY, [other, GATEWAY]) == GATEWAY
    assert await any_store.quota_admit("2026-05-02", [other, GATEWAY]) is None  # a new day

    spent = QuotaCheck("gateway", "", cost=0.5)
    await any_store.quota_spend("2026-05-03", [("gateway", "", 1)], tokens=10, cost=0.25)
    assert await any_store.quota_admit("2026-05-03", [spent]) is None
    await any_store.quota_spend("2026-05-03", [("gateway", "", 0)], tokens=10, cost=0.25)
    assert await any_store.quota_admit("2026-05-03", [spent]) == spent  # 0.5 of 0.5 spent

    assert await any_store.quota_first(DAY, "admins-told") is True
    assert await any_store.quota_first(DAY, "admins-told") is False
    assert await any_store.quota_first("2026-05-02", "admins-told") is True


async def test_two_replicas_admitting_at_once_let_exactly_the_limit_through(
    postgres_url: str,
) -> None:
    limit = QuotaCheck("user", "line:Ubusy", answers=5)
    async with PostgresStore(postgres_url) as one, PostgresStore(postgres_url) as two:
        results = await asyncio.gather(
            *(store.quota_admit(DAY, [limit]) for store in (one, two) * 8)
        )
        assert sum(r is None for r in results) == 5
        assert [c.answers for c in await quota_counts(two, DAY)] == [5]


async def test_over_the_daily_limit_a_user_gets_one_notice_and_the_model_is_not_asked(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, database: dict[str, str]
) -> None:
    limits = {"user_daily_answers": 2, "telegram_admin_ids": [7007], **database}
    async with telegram_gateway(make_settings, fake_llm, **limits) as gw:
        for n in (1, 2, 3):
            await gw.deliver(make_text_update(n, f"question {n}"))
        assert len(fake_llm.requests) == 2
        answers = gw.fake.sent_texts(1001)
        assert answers[:2] == ["Hello from the fake model."] * 2
        assert answers[2].startswith("You have reached today's limit of answers for you.")
        assert RESETS.search(answers[2])
        (alert,) = gw.fake.sent_texts(7007)
        assert alert.startswith("Daily limit reached by a user (telegram:1001): their answers wait")

        # An admin is exempt; a second user over the limit does not tell the admins again.
        for n in (4, 5, 6):
            await gw.deliver(make_text_update(n, f"admin {n}", chat_id=7007, user_id=7007))
        for n in (7, 8, 9):
            await gw.deliver(make_text_update(n, f"bob {n}", chat_id=2002, user_id=2002))
        assert len(fake_llm.requests) == 2 + 3 + 2
        assert gw.fake.sent_texts(2002)[2].startswith("You have reached today's limit")
        assert len(gw.fake.sent_texts(7007)) == 1 + 3  # the one alert, then three answers
        metrics = await (await gw.client.get("/metrics")).text()
        assert 'skillgate_quota_refusals_total{channel="telegram",limit="user"} 2.0' in metrics

    # After a restart the counts are still there: the user is still over the limit.
    async with telegram_gateway(make_settings, fake_llm, **limits) as gw:
        await gw.deliver(make_text_update(10, "after the restart"))
        assert len(fake_llm.requests) == 7
        assert gw.fake.sent_texts(1001)[-1].startswith("You have reached today's limit")


async def test_a_group_chat_and_the_gateway_have_their_own_daily_limits(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    def to_bot(update_id: int, user: int) -> dict[str, object]:
        text = "@skillgate_test_bot hi"
        return make_text_update(
            update_id,
            text,
            chat_id=GROUP,
            user_id=user,
            chat_type="supergroup",
            entities=[mention_entity(text, "@skillgate_test_bot")],
        )

    async with telegram_gateway(make_settings, fake_llm, chat_daily_answers=1) as gw:
        await gw.deliver(to_bot(1, 1001))
        await gw.deliver(to_bot(2, 2002))  # another member: the chat's limit, not theirs
        texts = gw.fake.sent_texts(GROUP)
        assert texts[1].startswith("This chat has reached today's limit of answers.")
        assert len(fake_llm.requests) == 1

    fake_llm.requests.clear()
    budget = {"daily_token_budget": 1, "data_dir": tmp_path / "another"}
    async with telegram_gateway(make_settings, fake_llm, **budget) as gw:
        await gw.deliver(make_text_update(11, "the first answer spends the budget"))
        await gw.deliver(make_text_update(12, "is there more?", chat_id=2002, user_id=2002))
        assert gw.fake.sent_texts(2002)[-1].startswith(
            "I have used up today's answer budget for everyone."
        )
        assert len(fake_llm.requests) == 1


async def test_replicas_on_one_database_share_the_limit(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, postgres_url: str
) -> None:
    shared = {"database_url": postgres_url, "user_daily_answers": 2}
    async with (
        telegram_gateway(make_settings, fake_llm, **shared) as one,
        telegram_gateway(make_settings, fake_llm, **shared) as two,
    ):
        await one.deliver(make_text_update(1, "on one"))
        await two.deliver(make_text_update(2, "on two"))
        await one.deliver(make_text_update(3, "on one again"))

        def sent() -> list[str]:  # either replica may have claimed each update
            return one.fake.sent_texts(1001) + two.fake.sent_texts(1001)

        async with asyncio.timeout(10):
            while len(sent()) < 3:
                await asyncio.sleep(0.02)
        await one.idle()
        await two.idle()
        assert len(fake_llm.requests) == 2
        assert sorted(t.startswith("You have reached today's limit") for t in sent()) == [
            False,
            False,
            True,
        ]


async def test_on_line_the_notice_is_the_reply_and_the_model_is_not_asked(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with line_rig(make_settings, fake_llm, user_daily_answers=1) as line:
        await line.deliver(text_event("first", reply_token=line.token()))
        await line.deliver(text_event("second", reply_token=line.token()))
        replies = line.fake.calls_to(REPLY)
        assert len(replies) == 2 and len(fake_llm.requests) == 1
        notice = replies[-1].body["messages"][-1]
        assert notice["text"].startswith("You have reached today's limit of answers for you.")
        assert RESETS.search(notice["text"]) and "quickReply" not in notice


async def test_an_answer_retried_after_a_failed_delivery_is_counted_and_spent_once(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(make_settings, fake_llm, user_daily_answers=5) as gw:
        gw.fake.fail_next("sendMessage", 502, "Bad Gateway")
        await gw.deliver(make_text_update(1, "a question"))
        assert gw.fake.sent_texts(1001) == ["Hello from the fake model."]
        assert len(fake_llm.requests) == 1
        day = datetime.now(UTC).date().isoformat()
        counts = {c.scope: c for c in await quota_counts(gw.parts.store, day)}
        (answer,) = [m for m in gw.fake.messages.values() if m.get("reply_markup")]
        rate = answer["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
        trace = await gw.parts.store.get_trace(int(rate.split(":")[1]))
        assert trace is not None and trace.prompt_tokens > 0
        assert counts["user"].answers == 1
        assert counts["user"].tokens == trace.prompt_tokens + trace.completion_tokens


async def test_the_admins_hear_once_a_day_for_each_scope_not_once_for_all(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    # An outsider spending their own limit first must not hide the gateway's budget running out.
    limits = {"user_daily_answers": 1, "daily_token_budget": 1, "telegram_admin_ids": [7007]}
    async with telegram_gateway(make_settings, fake_llm, **limits) as gw:
        await gw.deliver(make_text_update(1, "first", chat_id=2002, user_id=2002))
        await gw.deliver(make_text_update(2, "again", chat_id=2002, user_id=2002))  # user limit
        await gw.deliver(make_text_update(3, "mine", chat_id=1001, user_id=1001))  # the budget
        await gw.deliver(make_text_update(4, "more", chat_id=3003, user_id=3003))  # told already
        alerts = gw.fake.sent_texts(7007)
    assert len(fake_llm.requests) == 1
    assert len(alerts) == 2
    assert alerts[0].startswith("Daily limit reached by a user (telegram:2002)")
    assert alerts[1].startswith("The gateway's daily budget is used up")
