"""Faults around the gateway: platform 429s and 5xx, model failures, a locked database, a full disk.

In each the gateway keeps serving, people see a clear error where one is due, nothing is
sent twice and nothing is left half done.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from gateway.config import Settings
from gateway.core.agent import APOLOGY
from gateway.review.proposals import PROPOSED_FILE
from gateway.skills.library import SKILL_FILE, SkillLibrary
from tests.cards_support import ALICE, LINE_SECRET, fakes, rig_settings, running
from tests.console_support import sign_in
from tests.fakes.line_api import USER_ID, sign, text_event, webhook_body
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import make_callback_update, make_text_update
from tests.line_support import PUSH, REPLY, line_rig
from tests.synthesis_support import answer, gateway, proposal, synth_settings
from tests.telegram_harness import SECRET as TG_SECRET
from tests.telegram_harness import telegram_gateway


def echo(body: dict[str, Any]) -> str:
    return f"re: {body['messages'][-1]['content']}"


async def test_bot_api_429s_and_5xx_are_waited_out_and_each_answer_arrives_once(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.default = echo
    async with telegram_gateway(make_settings, fake_llm, channel_options={"max_retries": 1}) as gw:
        # Two 429s outlast the sender's one retry: the inbox tries the update again.
        gw.fake.fail_next(
            "sendMessage", 429, "Too Many Requests: retry after 1", retry_after=1, times=2
        )
        await gw.deliver(make_text_update(1, "one"))
        gw.fake.fail_next("sendMessage", 502, "Bad Gateway", times=2)
        await gw.deliver(make_text_update(2, "two"))
        answer = gw.fake.message(1001, 1)
        gw.fake.fail_next("answerCallbackQuery", 500, "Internal Server Error")
        rate = answer["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
        await gw.deliver(make_callback_update(3, rate, message_id=1, message_text=answer["text"]))
        await gw.deliver(make_text_update(4, "still serving"))
        assert gw.fake.sent_texts() == ["re: one", "re: two", "re: still serving"]
        assert [f["rating"] for f in await gw.feedback()] == [1]
        assert await gw.parts.store.inbox_pending_count() == 0


async def test_line_429_500_and_invalid_reply_tokens_end_in_exactly_one_delivery(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.default = echo
    async with line_rig(make_settings, fake_llm) as rig:
        rig.fake.fail_next(REPLY, 429, "Too Many Requests")
        await rig.deliver(text_event("rate limited", reply_token=rig.token()))
        # A token LINE no longer accepts: push, whose first try fails with a 500.
        rig.fake.fail_next(PUSH, 500, "Internal Server Error")
        await rig.deliver(text_event("invalid token", reply_token="expired-token"))
        rig.fake.fail_next(PUSH, 429, "Too Many Requests", times=2)
        await rig.deliver(text_event("pushed", redelivery=True))
        assert rig.fake.delivered_texts(USER_ID) == [
            "re: rate limited",
            "re: invalid token",
            "re: pushed",
        ]
        keys = [c.headers["X-Line-Retry-Key"] for c in rig.fake.calls_to(PUSH)]
        assert len(keys) == 5 and len(set(keys)) == 2  # retries reuse their batch's key
        fake_llm.error(500, times=3)
        await rig.deliver(text_event("model down", reply_token=rig.token()))
        apology = rig.fake.delivered_messages(USER_ID)[-1]
        assert apology["text"] == APOLOGY and "quickReply" not in apology


async def test_model_timeouts_and_500s_reach_the_user_as_an_apology_without_buttons(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with telegram_gateway(
        make_settings, fake_llm, llm_timeout_seconds=0.3, llm_max_retries=0
    ) as gw:
        fake_llm.stall(1.0)
        await gw.deliver(make_text_update(1, "first"))
        fake_llm.error(500)
        await gw.deliver(make_text_update(2, "second"))
        fake_llm.reply("Back to normal.")
        await gw.deliver(make_text_update(3, "third"))
        sent = [c for c in gw.fake.calls_of("sendMessage") if c.status == 200]
        assert [c.params["text"] for c in sent] == [APOLOGY, APOLOGY, "Back to normal."]
        assert [c.params.get("reply_markup") is None for c in sent] == [True, True, False]
        # The placeholders were shown, never handed back to the model as its own words.
        history = [str(m["content"]) for m in fake_llm.requests[-1]["messages"]]
        assert APOLOGY not in history and history[-3:] == ["first", "second", "third"]


@contextmanager
def locked(db_path: Path) -> Iterator[sqlite3.Connection]:
    """Another connection holding the database's write lock until the block ends."""
    conn = sqlite3.connect(db_path, isolation_level=None, timeout=0)
    conn.execute("begin exclusive")
    try:
        yield conn
    finally:
        conn.execute("rollback")
        conn.close()


async def test_a_locked_database_makes_both_webhooks_answer_503_and_nothing_is_lost(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    fake_llm.default = echo
    async with fakes() as (telegram, line):
        settings = rig_settings(make_settings, fake_llm, telegram, line)
        async with running(settings, telegram, line, fake_llm) as rig:
            await rig.parts.store.run(lambda db: db.execute("pragma busy_timeout = 200"))
            update = make_text_update(1, "telegram while locked", chat_id=2001, user_id=2001)
            body = webhook_body(
                text_event("line while locked", reply_token=rig.line.issue_reply_token(to=USER_ID))
            )
            tg_headers = {"X-Telegram-Bot-Api-Secret-Token": TG_SECRET}
            line_headers = {
                "X-Line-Signature": sign(LINE_SECRET, body),
                "Content-Type": "application/json",
            }

            async def post_both() -> tuple[int, int]:
                tg = await rig.client.post("/webhook/telegram", json=update, headers=tg_headers)
                ln = await rig.client.post("/webhook/line", data=body, headers=line_headers)
                return tg.status, ln.status

            with locked(settings.db_path):
                assert await post_both() == (503, 503)
                health = await rig.client.get("/healthz")
                assert health.status == 200  # reading still works under a writer's lock
            assert await post_both() == (200, 200)  # the platforms deliver again
            await rig.idle()
            assert telegram.sent_texts(2001) == ["re: telegram while locked"]
            assert line.delivered_texts(USER_ID) == ["re: line while locked"]


async def test_an_answer_held_up_by_a_locked_database_goes_out_once_the_lock_is_released(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    fake_llm.default = echo
    caplog.set_level(logging.WARNING, logger="gateway.runtime.inbox")
    async with telegram_gateway(make_settings, fake_llm) as gw:
        await gw.parts.store.run(lambda db: db.execute("pragma busy_timeout = 100"))
        fake_llm.pause()
        assert (await gw.post(make_text_update(1, "patience"))).status == 200
        await fake_llm.wait_for_requests(1)
        with locked(gw.parts.settings.db_path):
            fake_llm.resume()  # the answer is made but cannot be stored while the lock lasts
            async with asyncio.timeout(5):
                while not any("waits for the database" in r.message for r in caplog.records):
                    await asyncio.sleep(0.02)
        await gw.idle()
        assert gw.fake.sent_texts() == ["re: patience"]
        assert await gw.parts.store.inbox_pending_count() == 0
        # The model may have been asked again (its first answer could not be stored), but
        # the conversation holds the question and one answer.
        roles = await gw.parts.store.run(
            lambda db: [r["role"] for r in db.query("select role from messages order by id")]
        )
        assert roles == ["user", "assistant"]


def full_disk_for_staged_files(monkeypatch: pytest.MonkeyPatch) -> None:
    """Writing a staged SKILL.md.proposed fails as on a full disk (after its folder was made)."""
    real = SkillLibrary.write_text

    def write_text(self: SkillLibrary, slug: str, text: str, filename: str = SKILL_FILE) -> Path:
        if filename != PROPOSED_FILE:
            return real(self, slug, text, filename)
        self.path_for(slug, filename).parent.mkdir(parents=True, exist_ok=True)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(SkillLibrary, "write_text", write_text)


async def test_a_full_disk_while_staging_leaves_no_half_staged_proposal_and_the_next_pass_works(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    async with gateway(settings) as gw:
        session = await gw.seed()
        full_disk_for_staged_files(monkeypatch)
        fake_llm.reply(answer(proposal("chat-brevity", based_on=[session])))
        run = await gw.synthesize()
        assert run["status"] == "failed" and run["proposed"] == []
        assert "No space left on device" in run["error"]
        assert (await gw.call("GET", "/proposals"))[1] == []
        assert not (gw.skills_dir / "chat-brevity").exists()
        (listed,) = (await gw.call("GET", "/runs"))[1]
        assert "No space left on device" in listed["error"]

        monkeypatch.undo()  # room again: the same evidence gives the same proposal
        fake_llm.reply(answer(proposal("chat-brevity", based_on=[session])))
        run = await gw.synthesize()
        assert run["status"] == "ok" and len(run["proposed"]) == 1, run
        assert run["proposed"][0]["status"] == "pending"
        assert (gw.skills_dir / "chat-brevity" / PROPOSED_FILE).is_file()


async def test_a_full_disk_while_approving_is_a_clear_503_and_the_proposal_stays_pending(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    async with gateway(settings) as gw:
        session = await gw.seed()
        fake_llm.reply(answer(proposal("chat-brevity", based_on=[session])))
        (made,) = (await gw.synthesize())["proposed"]
        full_disk_for_staged_files(monkeypatch)
        status, body = await gw.call("POST", f"/proposals/{made['id']}/approve")
        assert status == 503 and "No space left on device" in body["error"], body
        assert (await gw.call("GET", f"/proposals/{made['id']}"))[1]["status"] == "pending"
        assert not (gw.skills_dir / "chat-brevity" / SKILL_FILE).exists()
        monkeypatch.undo()
        status, body = await gw.call("POST", f"/proposals/{made['id']}/approve")
        assert status == 200 and body["outcome"] == "approved"
        assert (gw.skills_dir / "chat-brevity" / SKILL_FILE).is_file()


def full_disk_for_every_skill_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every skill file write fails as on a full disk, the live SKILL.md included."""

    def write_text(self: SkillLibrary, slug: str, text: str, filename: str = SKILL_FILE) -> Path:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(SkillLibrary, "write_text", write_text)


async def test_a_full_disk_while_approving_in_the_console_is_a_503_with_the_reason(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = synth_settings(make_settings, fake_llm)
    async with gateway(settings) as gw:
        session = await gw.seed()
        fake_llm.reply(answer(proposal("chat-brevity", based_on=[session])))
        (made,) = (await gw.synthesize())["proposed"]
        csrf = await sign_in(gw.client)
        full_disk_for_every_skill_file(monkeypatch)
        resp = await gw.client.post(
            f"/admin/proposals/{made['id']}/approve", data={"csrf": csrf}, allow_redirects=False
        )
        assert resp.status == 503 and "No space left on device" in await resp.text()
        assert (await gw.call("GET", f"/proposals/{made['id']}"))[1]["status"] == "pending"
        status, body = await gw.call("POST", f"/proposals/{made['id']}/approve")
        assert status == 503 and "No space left on device" in body["error"], body


async def test_a_telegram_admins_press_on_a_full_disk_is_answered_with_the_reason(
    make_settings: Callable[..., Settings], fake_llm: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with fakes() as (telegram, line):
        settings = rig_settings(make_settings, fake_llm, telegram, line)
        async with running(settings, telegram, line, fake_llm) as rig:
            pid = await rig.propose()
            (card,) = rig.cards_in(ALICE)
            full_disk_for_every_skill_file(monkeypatch)
            resp = await rig.press(card, "Approve", user_id=ALICE)
            assert resp.status < 500
            assert f"Could not apply proposal #{pid}" in rig.acks()[-1]  # no spinning button
            assert "No space left on device" in rig.acks()[-1]
