"""SIGKILL of a real `skillgate serve` while due reminders are being sent, then a restart on
the same data: every occurrence is delivered and recorded once. The one exception is the
documented window (docs/RELIABILITY.md W1): a Telegram message the Bot API had accepted when
the process died is sent again; a LINE push in the same window is not (its retry key, made
of the task and its due time, makes LINE refuse the repeat)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

from gateway.config import Settings
from gateway.core.scheduled import NewTask
from gateway.store import open_store
from tests.fakes.line_api import FakeLineAPI
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegramAPI
from tests.line_support import PUSH
from tests.line_support import SECRET as LINE_SECRET
from tests.reliability.process import Server
from tests.telegram_harness import SECRET as TG_SECRET

TG_CHATS = [4001 + n for n in range(4)]
LINE_USERS = [f"U{n:032x}" for n in range(0xB1, 0xB5)]
HOLD = 10.0
"""Seconds the fakes hold their answers to sends, so the kill finds them in flight (LINE's
channel starts a few seconds after Telegram's: its SDK loads in the background)."""
LEASE = 8
"""SKILLGATE_INBOX_LEASE_SECONDS: the restarted process takes the dead one's claims after it."""


def reminder(channel: str, chat: str, due: float) -> NewTask:
    return NewTask(
        channel=channel,
        chat_id=chat,
        user_id=chat,
        kind="reminder",
        text=f"task for {chat}",
        timezone="UTC",
        next_at=due,
    )


async def test_sigkill_while_due_reminders_are_sent_delivers_each_once_but_the_window(
    tmp_path: Path, make_settings: Callable[..., Settings], fake_llm: FakeOpenAI
) -> None:
    async with FakeTelegramAPI() as telegram, FakeLineAPI() as line:
        env = {
            "SKILLGATE_DATA_DIR": str(tmp_path / "data"),
            "SKILLGATE_SYNTHESIS_INTERVAL_MINUTES": "0",
            "SKILLGATE_INBOX_LEASE_SECONDS": str(LEASE),
            "LLM_BASE_URL": fake_llm.base_url,
            "LLM_MODEL": "fake-model",
            "TELEGRAM_BOT_TOKEN": telegram.token,
            "TELEGRAM_WEBHOOK_SECRET": TG_SECRET,
            "TELEGRAM_API_BASE_URL": telegram.base_url,
            "LINE_CHANNEL_SECRET": LINE_SECRET,
            "LINE_CHANNEL_ACCESS_TOKEN": line.access_token,
            "LINE_API_BASE_URL": line.base_url,
        }
        settings = make_settings(data_dir=tmp_path / "data")
        store = await open_store(settings)
        due = time.time() + 1  # due as the process starts
        try:
            ids = [(await store.task_add(reminder("telegram", str(c), due))).id for c in TG_CHATS]
            ids += [(await store.task_add(reminder("line", u, due))).id for u in LINE_USERS]
        finally:
            await store.close()
        telegram.set_delay("sendMessage", HOLD)
        line.set_delay(PUSH, HOLD)
        first = Server(env)
        await first.start()
        async with asyncio.timeout(30):  # every send reached the fakes, which hold the answers
            while True:
                held = [c for c in telegram.calls_of("sendMessage") if c.status is None]
                pushes = [c for c in line.calls_to(PUSH) if c.status == 200]
                if len(held) == len(TG_CHATS) and len(pushes) == len(LINE_USERS):
                    break
                await asyncio.sleep(0.01)
        await first.kill()
        await telegram.wait_for("sendMessage", len(TG_CHATS), timeout=HOLD + 10)  # what they held
        telegram.set_delay("sendMessage", 0)
        line.set_delay(PUSH, 0)

        second = Server(env)
        await second.start()
        async with asyncio.timeout(LEASE + 30):  # after the dead process's leases ran out
            while True:
                store = await open_store(settings)
                try:
                    runs = [await store.task_runs(i) for i in ids]
                finally:
                    await store.close()
                if all(runs):
                    break
                await asyncio.sleep(0.2)
        assert await second.stop() == 0

    assert [[r.outcome for r in rs] for rs in runs] == [["sent"]] * len(ids)  # one record each
    for chat in TG_CHATS:  # accepted by Telegram as the process died: sent again (W1)
        assert telegram.sent_texts(chat) == [f"⏰ task for {chat}"] * 2
    for user in LINE_USERS:  # the push's retry key held: once
        assert line.delivered_texts(user) == [f"⏰ task for {user}"]
